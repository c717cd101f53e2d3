// server.mjs: find the home's `stratamem serve`, or start one as a child that lives and dies with DSH.
// A server that was already answering is only used as a client and never stopped.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

const MAX_SOCKET_PATH_BYTES = 107

/** Mirrors stratamem.core.server.sockets.socket_path_for. */
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
 * Returns {socketPath, child}; `child` is null when a server was already running.
 * `command` is the `stratamem` executable (a string split on spaces, e.g. "uv run stratamem").
 */
export async function ensureServer({ home, command = 'stratamem', startupTimeoutMs = 30000, env = process.env }) {
  const socketPath = socketPathFor(home)
  if (await answers(socketPath)) return { socketPath, child: null }
  const [bin, ...pre] = String(command).split(/\s+/).filter(Boolean)
  const child = spawn(bin, [...pre, 'serve', '--home', home], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...env, STRATAMEM_DSH_PARENT_PID: String(process.pid) },
  })
  const stderr = []
  child.stderr.on('data', (chunk) => {
    stderr.push(String(chunk))
    if (stderr.length > 40) stderr.shift()
  })
  const ready = await new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => fail(new Error(`stratamem serve did not start within ${startupTimeoutMs} ms`)), startupTimeoutMs)
    const fail = (error) => { clearTimeout(timer); reject(error) }
    child.once('error', fail)
    child.once('exit', (code, signal) => fail(new Error(`stratamem serve exited (${code ?? signal}): ${stderr.join('').slice(-2000)}`)))
    child.stdout.on('data', (chunk) => {
      out += String(chunk)
      for (const line of out.split('\n')) {
        try {
          const msg = JSON.parse(line)
          if (msg && msg.ready) { clearTimeout(timer); resolve(msg) }
        } catch {}
      }
    })
  }).catch(async (error) => {
    await stopChild(child, 2000)
    throw error
  })
  child.stdout.resume() // keep draining: a full pipe would block the server
  child.removeAllListeners('exit')
  const onExit = () => { if (child.exitCode === null) child.kill('SIGTERM') }
  process.once('exit', onExit)
  child.once('exit', () => process.removeListener('exit', onExit))
  return { socketPath: ready.socket || socketPath, child }
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
