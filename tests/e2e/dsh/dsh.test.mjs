// dsh.test.mjs: the real stratamem DSH plugin in a real Cordis context against a running
// `stratamem serve` (started by test_dsh_harness.py). Env: STRATAMEM_DSH_PLUGIN (index.mjs),
// STRATAMEM_DSH_HOME (served home), STRATAMEM_DSH_SERVER_PID, STRATAMEM_DSH_COMMAND, STRATAMEM_DSH_SCRATCH.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { CORDIS_MAJOR, createHarness, listeners, userQuery } from './fake-dsh.mjs'

const plugin = await import(process.env.STRATAMEM_DSH_PLUGIN)
const { DshClient } = await import(path.join(path.dirname(process.env.STRATAMEM_DSH_PLUGIN), 'grpc.mjs'))
const { recordName, spoolDir } = await import(path.join(path.dirname(process.env.STRATAMEM_DSH_PLUGIN), 'spool.mjs'))
const HOME = process.env.STRATAMEM_DSH_HOME
const SPOOL = spoolDir(HOME)
const SERVER_PID = Number(process.env.STRATAMEM_DSH_SERVER_PID)
const RUN = `c${CORDIS_MAJOR}`
const RECALL_SOURCE = { kind: 'plugin', plugin: 'stratamem', form: 'recall' }
const BASE = { home: HOME, recallTimeoutMs: 1500, drainTimeoutMs: 4000, command: process.env.STRATAMEM_DSH_COMMAND, startupTimeoutMs: 90000 }
const metrics = {}

const status = async () => {
  const c = new DshClient(path.join(HOME, 'run', 'stratamem.sock'))
  try { return await c.call('Status', {}, { timeoutMs: 5000 }) } finally { c.close() }
}
const waitFor = async (pred, ms = 15000) => {
  const end = Date.now() + ms
  while (Date.now() < end) { if (await pred()) return true; await new Promise((r) => setTimeout(r, 50)) }
  return false
}
const session = (id, preset = 'coder') => ({ id: `${RUN}-${id}`, header: { agentPreset: preset, cwd: '/work/app' } })
const signal = () => new AbortController().signal
const enter = (messages, extra = {}) => () => ({ kind: 'enter', messages, ...extra })

/** One full DSH turn: turn/start, pre-step (step 1), user/message, assistant/message, turn/end. */
async function turn(h, s, n, text, answer, extra = {}) {
  h.sessionEvent(s, { type: 'turn/start', seq: 0, time: Date.now(), data: { turn: n } })
  const q = userQuery(text)
  const d = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: n, step: 1, signal: signal() }, enter([q], extra))
  h.sessionEvent(s, { type: 'user/message', seq: 1, time: Date.now(), data: q })
  h.sessionEvent(s, { type: 'assistant/message', seq: 2, time: Date.now(), data: { turn: n, step: 1, message: { role: 'assistant', content: [{ type: 'text', text: answer }] } } })
  h.sessionEvent(s, { type: 'turn/end', seq: 3, time: Date.now(), data: { turn: n, reason: { kind: 'completed' } } })
  return d
}

test('recall: the query stays first, the plugin recall follows it, startsRequestSeries survives', async () => {
  const h = await createHarness(plugin, BASE)
  assert.equal(h.loadError, null)
  const before = (await status()).captured
  const seed = session('seed')
  await turn(h, seed, 1, `remember for ${RUN}: the billing cron runs at 04:15 UTC on worker-7`, 'Noted: billing cron 04:15 UTC, worker-7.')
  assert.ok(await waitFor(async () => (await status()).captured > before), 'the seed turn was captured')

  const s = session('ask')
  const q = userQuery(`when does the billing cron run on worker-7 (${RUN})`)
  const d = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 1, step: 1, signal: signal() }, enter([q], { startsRequestSeries: true }))
  assert.equal(d.kind, 'enter')
  assert.equal(d.startsRequestSeries, true)
  assert.equal(d.messages[0], q)
  assert.deepEqual(d.messages[1].source, RECALL_SOURCE)
  const text = d.messages[1].content[0].text
  assert.match(text, /^<memos_context>\n/)
  assert.match(text, /04:15/)
  assert.ok(text.length <= 6000)
  // step 2 and a re-entered step 1 of the same turn do not recall again
  const d2 = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 1, step: 2, signal: signal() }, enter([q]))
  assert.equal(d2.messages.length, 1)
  const again = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 1, step: 1, signal: signal() }, enter([q]))
  assert.equal(again.messages.length, 1)
  // a rejected decision comes back as is
  const rejected = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 2, step: 1, signal: signal() }, () => ({ kind: 'reject' }))
  assert.deepEqual(rejected, { kind: 'reject' })

  const [section] = h.services.systemPrompt.list()
  assert.equal(section.name, 'tool:stratamem')
  assert.equal(section.order, 114)
  assert.match(section.text, /untrusted historical data/)
  assert.match(section.text, /memos_search/)
  assert.deepEqual(h.services.tools.list().sort(), ['memos_environment', 'memos_get', 'memos_search', 'memos_skill_get', 'memos_skill_list', 'memos_timeline'])
  await h.dispose({ timeoutMs: 8000 })
  await h.close()
})

test('an aborted turn returns the decision as is and does not suppress the next; a fork recalls on its own', async () => {
  const h = await createHarness(plugin, BASE)
  const s = session('abort')
  const q = userQuery(`billing cron schedule on worker-7 (${RUN})`)
  const ac = new AbortController()
  const original = { kind: 'enter', messages: [q] }
  const pending = h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 1, step: 1, signal: ac.signal }, async () => { queueMicrotask(() => ac.abort()); return original })
  assert.equal(await pending, original)
  const next = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 2, step: 1, signal: signal() }, enter([q]))
  assert.deepEqual(next.messages[1]?.source, RECALL_SOURCE)
  // a restored Session object reusing the id has its own turn state: it recalls turn 2 again
  const restored = { id: s.id, header: s.header }
  const forked = await h.preStep({ agent: { id: s.id, session: restored }, messages: [q], turn: 2, step: 1, signal: signal() }, enter([q]))
  assert.deepEqual(forked.messages[1]?.source, RECALL_SOURCE)
  const same = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 2, step: 1, signal: signal() }, enter([q]))
  assert.equal(same.messages.length, 1)
  await h.dispose({ timeoutMs: 8000 })
  await h.close()
})

test('tools answer through the service; bad arguments are refused', async () => {
  const h = await createHarness(plugin, BASE)
  const s = session('tools')
  const exec = { agent: { id: s.id, session: s }, signal: signal(), callId: 'call-1' }
  const found = await h.services.tools.execute('memos_search', { query: `billing cron worker-7 ${RUN}`, maxResults: 5 }, exec)
  assert.ok(found.hits.length >= 1, JSON.stringify(found))
  assert.equal(found.timedOut, undefined)
  const hit = found.hits.find((x) => x.refKind === 'trace') ?? found.hits[0]
  const got = await h.services.tools.execute('memos_get', { id: hit.refId, kind: 'trace' }, exec)
  assert.equal(got.found, true)
  assert.match(got.body, /04:15/)
  const missing = await h.services.tools.execute('memos_skill_get', { id: 'sk-missing' }, exec)
  assert.equal(missing.found, false)
  const skills = await h.services.tools.execute('memos_skill_list', { status: 'active' }, exec)
  assert.equal(typeof skills.text, 'string')
  const env = await h.services.tools.execute('memos_environment', { limit: 3 }, exec)
  assert.equal(typeof env.text, 'string')
  const timeline = await h.services.tools.execute('memos_timeline', { episodeId: 'ep-missing' }, exec)
  assert.deepEqual(timeline.traces, [])
  await assert.rejects(h.services.tools.execute('memos_search', { query: 'x', maxResults: 500 }, exec), /maxResults/)
  await assert.rejects(h.services.tools.execute('memos_get', {}, exec), /id is required/)
  await h.dispose({ timeoutMs: 8000 })
  await h.close()
})

test('hard guard: a frozen service gives the original decision and timedOut at the deadline', async () => {
  const h = await createHarness(plugin, { ...BASE, recallTimeoutMs: 400 })
  const s = session('frozen')
  process.kill(SERVER_PID, 'SIGSTOP')
  try {
    const q = userQuery('anything while the service is frozen')
    const original = { kind: 'enter', messages: [q], startsRequestSeries: true }
    let started = performance.now()
    const d = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 1, step: 1, signal: signal() }, () => original)
    const recallMs = performance.now() - started
    assert.equal(d, original)
    assert.ok(recallMs < 400 + 1000, `returned after ${recallMs} ms`)
    started = performance.now()
    const r = await h.services.tools.execute('memos_search', { query: 'frozen' }, { agent: { id: s.id, session: s }, signal: signal(), callId: 'c' })
    assert.deepEqual(r, { text: 'No relevant memories found.', hits: [], tierLatencyMs: { tier1: 0, tier2: 0, tier3: 0 }, timedOut: true })
    assert.ok(performance.now() - started < 400 + 1000)
    // the turn/end listener still returns at once, with the turn durable in the spool
    h.sessionEvent(s, { type: 'turn/start', seq: 0, time: Date.now(), data: { turn: 1 } })
    h.sessionEvent(s, { type: 'assistant/message', seq: 2, time: Date.now(), data: { turn: 1, message: { content: [{ type: 'text', text: 'ok' }] } } })
    started = performance.now()
    const res = h.sessionEvent(s, { type: 'turn/end', seq: 3, time: Date.now(), data: { turn: 1, reason: { kind: 'completed' } } })
    assert.equal(res.asyncListeners, 0)
    assert.ok(performance.now() - started < 1000)
    assert.ok(fs.existsSync(path.join(SPOOL, recordName(`${s.id}:1`))), 'the turn waits in the spool')
  } finally {
    process.kill(SERVER_PID, 'SIGCONT')
  }
  await h.dispose({ timeoutMs: 8000 })
  await h.close()
})

test('turn/end twice spools once; disposal drains, closes and unregisters, and keeps a server it did not start', async () => {
  const h = await createHarness(plugin, BASE)
  const s = session('dispose')
  const capturedBefore = (await status()).captured
  await turn(h, s, 1, `dispose test ${RUN}: keep the deploy window on fridays closed`, 'Understood.')
  h.sessionEvent(s, { type: 'turn/end', seq: 4, time: Date.now(), data: { turn: 1, reason: { kind: 'completed' } } })
  const disposedAt = performance.now()
  h.sessionDisposed(s)
  assert.ok(performance.now() - disposedAt < 50, 'session/disposed returns at once')
  const r = await h.dispose({ timeoutMs: 8000 })
  assert.equal(r.outcome, 'done')
  assert.equal(r.disposerCalls, 1)
  const st = await status()
  assert.equal(st.pending, 0)
  assert.equal(st.captured, capturedBefore + 1) // spooled once, captured once
  assert.ok(!fs.existsSync(path.join(SPOOL, recordName(`${s.id}:1`))), 'consumed turns leave the spool')
  assert.deepEqual(h.services.systemPrompt.list(), [])
  assert.deepEqual(h.services.tools.list(), [])
  for (const ev of ['agent/pre-step', 'session/event', 'session/disposed']) assert.equal(listeners(h.root, ev).length, 0, ev)
  const q = userQuery('after dispose')
  const bare = await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: 2, step: 1, signal: signal() }, enter([q]))
  assert.equal(bare.messages.length, 1)
  process.kill(SERVER_PID, 0) // still alive: the plugin never stops a server it did not start
  await h.close()
})

test('a startup failure rolls back every registration and leaves the host running', async () => {
  const home = fs.mkdtempSync(path.join(process.env.STRATAMEM_DSH_SCRATCH, 'nohome-'))
  const h = await createHarness(plugin, { ...BASE, home, command: '/nonexistent/stratamem', startupTimeoutMs: 2000 })
  assert.equal(h.loadError, null)
  assert.deepEqual(h.services.systemPrompt.list(), [])
  assert.deepEqual(h.services.tools.list(), [])
  for (const ev of ['agent/pre-step', 'session/event', 'session/disposed']) assert.equal(listeners(h.root, ev).length, 0, ev)
  assert.equal((await h.dispose({ timeoutMs: 2000 })).outcome, 'done')
  await h.close()
})

test('recall latency over 50 turns and the drain time of 100 queued captures (measured)', async () => {
  const h = await createHarness(plugin, { ...BASE, recallTimeoutMs: 3000 })
  const s = session('bench')
  const lat = []
  for (let n = 1; n <= 50; n++) {
    const q = userQuery(`bench ${RUN} turn ${n}: billing cron worker-7 schedule`)
    const t0 = performance.now()
    await h.preStep({ agent: { id: s.id, session: s }, messages: [q], turn: n, step: 1, signal: signal() }, enter([q]))
    lat.push(performance.now() - t0)
  }
  lat.sort((a, b) => a - b)
  metrics.recall_p50_ms = +lat[24].toFixed(2)
  metrics.recall_p95_ms = +lat[47].toFixed(2)
  const d = session('drain')
  const before = (await status()).captured
  process.kill(SERVER_PID, 'SIGSTOP') // queue 100 turns while the service cannot take them
  try {
    for (let n = 1; n <= 100; n++) {
      h.sessionEvent(d, { type: 'turn/start', seq: 0, time: Date.now(), data: { turn: n } })
      h.sessionEvent(d, { type: 'user/message', seq: 1, time: Date.now(), data: userQuery(`drain ${RUN} turn ${n}`) })
      h.sessionEvent(d, { type: 'assistant/message', seq: 2, time: Date.now(), data: { turn: n, message: { content: [{ type: 'text', text: `answer ${n}` }] } } })
      h.sessionEvent(d, { type: 'turn/end', seq: 3, time: Date.now(), data: { turn: n, reason: { kind: 'completed' } } })
    }
  } finally {
    process.kill(SERVER_PID, 'SIGCONT')
  }
  const t0 = performance.now()
  assert.ok(await waitFor(async () => (await status()).captured >= before + 100, 120000))
  metrics.drain_100_ms = +(performance.now() - t0).toFixed(1)
  console.log(`STRATAMEM_DSH_METRICS ${JSON.stringify({ cordis: CORDIS_MAJOR, ...metrics })}`)
  await h.dispose({ timeoutMs: 8000 })
  await h.close()
})
