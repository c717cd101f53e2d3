// child.test.mjs: with nothing answering on the home's socket the plugin has the home's resident service
// started (detached, shared with every client of the home); disposing drains but leaves it running
// for the next DSH process or host (env as in dsh.test.mjs).
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

test('the plugin starts the resident service when none answers and leaves it for the next process', async () => {
  const home = fs.mkdtempSync(path.join(process.env.STRATAMEM_DSH_SCRATCH, 'child-'))
  fs.writeFileSync(path.join(home, 'config.yaml'), 'embedding:\n  provider: none\n')
  const sock = path.join(home, 'run', 'stratamem.sock')
  assert.equal(await answers(sock), false)
  const h = await createHarness(plugin, { home, command: process.env.STRATAMEM_DSH_COMMAND, startupTimeoutMs: 120000 })
  assert.equal(h.loadError, null)
  assert.equal(await answers(sock), true)
  const pid = JSON.parse(fs.readFileSync(path.join(home, 'run', 'serve.json'), 'utf8')).pid
  const s = { id: 'child-s', header: {} }
  const q = userQuery('remember this: the spare boathouse key hangs behind the barometer')
  const d = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 1, step: 1, signal: new AbortController().signal }, () => ({ kind: 'enter', messages: [q] }))
  assert.equal(d.messages[0], q)
  h.sessionEvent(s, { type: 'turn/start', seq: 0, time: Date.now(), data: { turn: 1 } })
  h.sessionEvent(s, { type: 'assistant/message', seq: 2, time: Date.now(), data: { turn: 1, message: { content: [{ type: 'text', text: 'hi' }] } } })
  h.sessionEvent(s, { type: 'turn/end', seq: 3, time: Date.now(), data: { turn: 1, reason: { kind: 'completed' } } })
  const r = await h.dispose({ timeoutMs: 20000 })
  assert.equal(r.outcome, 'done')
  // captured through the service: the spool is empty again
  assert.deepEqual(fs.readdirSync(path.join(home, 'dsh', 'spool')).filter((n) => n.endsWith('.turn')), [])
  await h.close()
  // the service outlives this DSH process (its own session and process group); a second DSH joins it
  process.kill(pid, 0)
  assert.equal(await answers(sock), true)
  const h2 = await createHarness(plugin, { home, command: process.env.STRATAMEM_DSH_COMMAND, startupTimeoutMs: 120000, recallTimeoutMs: 3000 })
  assert.equal(h2.loadError, null)
  assert.equal(JSON.parse(fs.readFileSync(path.join(home, 'run', 'serve.json'), 'utf8')).pid, pid)
  // the next DSH recalls, in its first step, what the previous one was told
  const s2 = { id: 'child-s2', header: {} }
  const q2 = userQuery('where does the spare boathouse key hang')
  const d2 = await h2.preStep({ agent: { id: s2.id, session: s2 }, messages: [q2], turn: 1, step: 1, signal: new AbortController().signal }, () => ({ kind: 'enter', messages: [q2] }))
  assert.equal(d2.messages.length, 2)
  assert.match(d2.messages[1].content[0].text, /barometer/)
  await h2.dispose({ timeoutMs: 20000 })
  await h2.close()
  process.kill(pid, 'SIGTERM') // the test's own clean-up (users rely on the idle exit)
})
