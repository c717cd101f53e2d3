// server.mjs: find the home's resident `stratamem serve`, or have `stratamem start` start it (detached,
// shared with every other client of the home, never stopped by the plugin).
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

const MAX_SOCKET_PATH_BYTES = 107

/** Mirrors stratamem.contract.hostkit.home.socket_path_for. */
export function socketPathFor(home) {
  const natural = path.join(home, 'run', 'stratamem.sock')
  if (Buffer.byteLength(natural) <= MAX_SOCKET_PATH_BYTES) return natural
  const digest = createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16)
  return path.join(os.tmpdir(), `stratamem-${digest}.sock`)
}

export function answers(socketPath, timeoutMs = 500) {
  return new Promise((resolve) => {
    const sock = net.connect(socketPath)
    const timer = setTimeout(() => { sock.destroy(); resolve(false) }, timeoutMs)
    sock.once('connect', () => { clearTimeout(timer); sock.end(); resolve(true) })
    sock.once('error', () => { clearTimeout(timer); resolve(false) })
  })
}

/**
 * Returns {socketPath, child}; `child` is always null: the home's resident service is shared by every
 * client of the home (Hermes, OpenClaw, the CLI), so the plugin never owns or stops it. When nothing
 * answers, `stratamem start` starts it the way every thin client does (one starter per home, detached,
 * logs in the home's logs/, idle exit server.idle_exit_s) and returns once it answers.
 * `command` is the `stratamem` executable (a string split on spaces, e.g. "uv run stratamem").
 */
export async function ensureServer({ home, command = 'stratamem', startupTimeoutMs = 30000, env = process.env }) {
  const socketPath = socketPathFor(home)
  if (await answers(socketPath)) return { socketPath, child: null }
  const [bin, ...pre] = String(command).split(/\s+/).filter(Boolean)
  const args = [...pre, 'start', '--home', home, '--budget', String(Math.max(1, startupTimeoutMs / 1000))]
  const ready = await new Promise((resolve, reject) => {
    execFile(bin, args, { env, timeout: startupTimeoutMs + 5000 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`stratamem service did not start within ${startupTimeoutMs} ms: ${String(stderr || error.message).slice(-2000)}`))
      try { resolve(JSON.parse(String(stdout).trim().split('\n').pop())) } catch { resolve({}) }
    })
  })
  return { socketPath: ready.socket || socketPath, child: null }
}

/** SIGTERM (the server drains and shuts its core down), SIGKILL after `graceMs`. */
export function stopChild(child, graceMs = 5000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    child.once('exit', () => { clearTimeout(timer); resolve() })
    child.kill('SIGTERM')
  })
}
