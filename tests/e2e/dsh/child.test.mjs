// child.test.mjs: with nothing answering on the home's socket the plugin starts `stratamem serve` as
// its child, and its disposer stops that child after the drain (env as in dsh.test.mjs).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { createHarness, userQuery } from './fake-dsh.mjs'

const plugin = await import(process.env.STRATAMEM_DSH_PLUGIN)

const answers = (sock) => new Promise((resolve) => {
  const c = net.connect(sock)
  c.once('connect', () => { c.end(); resolve(true) })
  c.once('error', () => resolve(false))
})

test('the plugin starts a server when none answers and stops only that one', async () => {
  const home = fs.mkdtempSync(path.join(process.env.STRATAMEM_DSH_SCRATCH, 'child-'))
  fs.writeFileSync(path.join(home, 'config.yaml'), 'embedding:\n  provider: none\n')
  const sock = path.join(home, 'run', 'stratamem.sock')
  assert.equal(await answers(sock), false)
  const h = await createHarness(plugin, { home, command: process.env.STRATAMEM_DSH_COMMAND, startupTimeoutMs: 120000 })
  assert.equal(h.loadError, null)
  assert.equal(await answers(sock), true)
  const pid = JSON.parse(fs.readFileSync(path.join(home, 'run', 'serve.json'), 'utf8')).pid
  const s = { id: 'child-s', header: {} }
  const q = userQuery('hello child server')
  const d = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 1, step: 1, signal: new AbortController().signal }, () => ({ kind: 'enter', messages: [q] }))
  assert.equal(d.messages[0], q)
  h.sessionEvent(s, { type: 'turn/start', seq: 0, time: Date.now(), data: { turn: 1 } })
  h.sessionEvent(s, { type: 'assistant/message', seq: 2, time: Date.now(), data: { turn: 1, message: { content: [{ type: 'text', text: 'hi' }] } } })
  h.sessionEvent(s, { type: 'turn/end', seq: 3, time: Date.now(), data: { turn: 1, reason: { kind: 'completed' } } })
  const r = await h.dispose({ timeoutMs: 20000 })
  assert.equal(r.outcome, 'done')
  assert.throws(() => process.kill(pid, 0), /ESRCH/) // the child is gone
  // captured before the child exited: the spool is empty again
  assert.deepEqual(fs.readdirSync(path.join(home, 'dsh', 'spool')).filter((n) => n.endsWith('.turn')), [])
  await h.close()
})
