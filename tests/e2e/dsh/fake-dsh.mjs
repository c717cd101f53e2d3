// fake-dsh.mjs: a stand-in DSH host around a REAL Cordis context from npm (adapted from
// reference/dsh-harness): fake systemPrompt/tools/llm services, the agent/pre-step waterfall, the
// contained session/event firehose, and a time-bounded dispose that runs the disposer apply returned.
// Default backend @cordisjs/core 3.18.x; DSH_CORDIS=4 uses upstream cordis 4.0.0-rc.x ("cordis4").

export const CORDIS_MAJOR = process.env.DSH_CORDIS === '4' ? 4 : 3
const cordis = await import(CORDIS_MAJOR === 4 ? 'cordis4' : '@cordisjs/core')
export const { Context } = cordis

// Same numbers in Cordis 3 (ScopeStatus) and Cordis 4 (FiberState).
export const Status = { PENDING: 0, LOADING: 1, ACTIVE: 2, FAILED: 3, DISPOSED: 4, UNLOADING: 5 }

// ---------------------------------------------------------------------------
// Stand-ins for helpers a real plugin imports from DSH packages.
// ---------------------------------------------------------------------------

let messageCounter = 0

/** Stand-in for the tools package's defineTool(): validates and freezes. */
export function defineTool(def) {
  if (!def || typeof def.name !== 'string' || !def.name) throw new TypeError('defineTool: "name" is required')
  if (typeof def.execute !== 'function') throw new TypeError(`defineTool(${def.name}): "execute" must be a function`)
  return Object.freeze({ ...def })
}

/** Stand-in for the llm package's createUserMessage(). */
export function createUserMessage({ content, source }) {
  return { id: `msg-${++messageCounter}`, role: 'user', content, source }
}

/** A user query as DSH hands it to agent/pre-step. */
export function userQuery(text) {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } })
}

// ---------------------------------------------------------------------------
// Fake services. Each registration returns an unregister function; the
// service keeps a live list so a test can check that dispose cleaned up.
// ---------------------------------------------------------------------------

export function createSystemPromptService() {
  const sections = new Map()
  return {
    section(def) {
      if (!def || typeof def.name !== 'string') throw new TypeError('section: "name" is required')
      const key = Symbol(def.name)
      sections.set(key, { name: def.name, order: def.order ?? 0, text: def.text })
      return () => sections.delete(key)
    },
    list: () => [...sections.values()].sort((a, b) => a.order - b.order),
    render: () => [...sections.values()].sort((a, b) => a.order - b.order).map((s) => s.text).join('\n\n'),
  }
}

export function createToolsService() {
  const tools = new Map()
  return {
    register(tool) {
      if (tools.has(tool.name)) throw new Error(`tool "${tool.name}" is already registered`)
      tools.set(tool.name, tool)
      return () => tools.get(tool.name) === tool && tools.delete(tool.name)
    },
    list: () => [...tools.keys()],
    get: (name) => tools.get(name),
    async execute(name, args, exec = {}) {
      const tool = tools.get(name)
      if (!tool) throw new Error(`unknown tool "${name}"`)
      return tool.execute(args, { signal: new AbortController().signal, callId: 'call-1', ...exec })
    },
  }
}

/** The real DSH llm service API is not known here; this is a recorder. */
export function createLlmService(respond = () => ({ text: '' })) {
  const calls = []
  return {
    calls,
    async complete(request) {
      calls.push(request)
      return respond(request)
    },
  }
}

// ---------------------------------------------------------------------------
// Event dispatch helpers that work on Cordis 3 and 4.
// ---------------------------------------------------------------------------

function hookStore(ctx) {
  return CORDIS_MAJOR === 4 ? ctx.events : ctx.lifecycle
}

/** Current listener callbacks for `name` (snapshot, registration order). */
export function listeners(ctx, name) {
  const store = hookStore(ctx)
  const hooks = store._hooks[name] || []
  const visible = CORDIS_MAJOR === 4 ? hooks : store.filterHooks(hooks)
  return visible.map((hook) => hook.callback)
}

/**
 * Waterfall: waterfall(ctx, name, ...args, inner). Each listener is called as
 * listener(...args, next); next() runs the rest of the chain and finally
 * inner(). The first listener registered is the outermost. Cordis 4 has this
 * built in (ctx.waterfall); Cordis 3 has no waterfall, so it is rebuilt here
 * over the same hook list that ctx.emit uses.
 */
export function waterfall(ctx, name, ...args) {
  if (typeof ctx.waterfall === 'function') return ctx.waterfall(name, ...args)
  const inner = args.pop()
  const callbacks = listeners(ctx, name)
  const dispatch = (index) => {
    const callback = callbacks[index]
    if (!callback) return inner()
    let called = false
    const next = () => {
      if (called) throw new Error(`${name}: next() called multiple times`)
      called = true
      return dispatch(index + 1)
    }
    return callback(...args, next)
  }
  return dispatch(0)
}

/**
 * Fire-and-forget emit with contained failures, as DSH describes session/event:
 * listeners run synchronously in order, a throw does not stop the others, and a
 * returned promise is not awaited (its rejection is recorded, not unhandled).
 */
export function emitContained(ctx, name, args, onError) {
  let asyncListeners = 0
  for (const callback of listeners(ctx, name)) {
    try {
      const result = callback(...args)
      if (result && typeof result.then === 'function') {
        asyncListeners++
        result.then(undefined, (error) => onError(error, name))
      }
    } catch (error) {
      onError(error, name)
    }
  }
  return { asyncListeners }
}

// ---------------------------------------------------------------------------
// The harness.
// ---------------------------------------------------------------------------

function servicePlugin(name, value) {
  return {
    name: `fake-${name}`,
    apply(ctx) {
      // Cordis 3: ctx.set(name, value) registers and ties it to this scope.
      // Cordis 4: ctx.provide(name, value) does the same for this fiber.
      if (CORDIS_MAJOR === 4) ctx.provide(name, value)
      else ctx.set(name, value)
    },
  }
}

function delay(ms) {
  let timer
  const promise = new Promise((resolve) => { timer = setTimeout(resolve, ms) })
  return { promise, cancel: () => clearTimeout(timer) }
}

/**
 * Load `plugin` (a module namespace or plugin object with name/inject/Config/apply)
 * into a fresh root Context next to the fake services.
 */
export async function createHarness(plugin, config, options = {}) {
  const root = new Context()
  const errors = []
  const warnings = []
  const listenerErrors = []
  if (CORDIS_MAJOR === 3) {
    // With a second listener registered, Cordis 3 stops printing these itself.
    root.on('internal/error', (error) => { errors.push(error) })
    root.on('internal/warning', (warning) => { warnings.push(warning) })
  }

  const services = {
    systemPrompt: createSystemPromptService(),
    tools: createToolsService(),
    llm: createLlmService(options.llm),
  }
  const serviceForks = {}
  for (const [name, value] of Object.entries(services)) {
    if (options.omitServices?.includes(name)) continue
    serviceForks[name] = root.plugin(servicePlugin(name, value))
    // Cordis 4: a provided service only counts once its fiber is ACTIVE, so wait.
    if (CORDIS_MAJOR === 4) await serviceForks[name]
  }

  // Wrap the plugin so the harness sees the disposer returned by apply and can
  // time it. Cordis 3 ignores apply's return value (it only stores it in
  // runtime.value), so the wrapper runs it from a 'dispose' listener. Cordis 4
  // collects a function (or a promise of one) returned by apply as an effect
  // and awaits it in fiber.dispose(); the wrapper only adds timing.
  const probe = { applyCalls: 0, disposerCalls: 0, disposeStartedAt: null, disposeEndedAt: null, disposeError: null, task: null }
  const runDisposer = (disposer) => {
    if (typeof disposer !== 'function') return undefined
    probe.disposerCalls++
    probe.disposeStartedAt = performance.now()
    return disposer()
  }
  const track = (promise) => {
    probe.task = Promise.resolve(promise).then(
      () => { probe.disposeEndedAt = performance.now() },
      (error) => { probe.disposeEndedAt = performance.now(); probe.disposeError = error },
    )
    return probe.task
  }
  const wrapper = {
    name: plugin.name,
    inject: plugin.inject,
    Config: plugin.Config,
    apply(ctx, cfg) {
      probe.applyCalls++
      const result = plugin.apply(ctx, cfg)
      if (CORDIS_MAJOR === 4) {
        return Promise.resolve(result).then((disposer) => {
          if (typeof disposer !== 'function') return disposer
          return () => track(runDisposer(disposer))
        })
      }
      ctx.on('dispose', () => { track(Promise.resolve(result).then(runDisposer)) })
      return result
    },
  }

  const fiber = root.plugin(wrapper, config)
  let loadError = null
  if (CORDIS_MAJOR === 4) {
    try { await fiber } catch (error) { loadError = error }
  } else {
    await root.lifecycle.flush()
    loadError = fiber.runtime.error ?? fiber.error ?? null
  }

  // Cordis 3 does not refresh `status` on dispose; uid === null marks a disposed scope.
  const state = () => {
    if (CORDIS_MAJOR === 4) return fiber.state
    return fiber.uid === null ? Status.DISPOSED : fiber.runtime.status
  }

  return {
    root,
    fiber,
    services,
    serviceForks,
    probe,
    errors,
    warnings,
    listenerErrors,
    loadError,
    state,

    /** agent/pre-step: awaited waterfall ending in `downstream` (the host's decision). */
    async preStep(payload, downstream) {
      return await waterfall(root, 'agent/pre-step', payload, downstream)
    },

    /** session/event: sync, fire-and-forget, failures contained. */
    sessionEvent(session, event) {
      return emitContained(root, 'session/event', [session, event], (error) => listenerErrors.push(error))
    },

    /** session/disposed: plain emit (sync), failures contained. */
    sessionDisposed(session) {
      return emitContained(root, 'session/disposed', [session], (error) => listenerErrors.push(error))
    },

    /**
     * Dispose the plugin and wait for its disposer, at most `timeoutMs`.
     * Returns { outcome: 'done' | 'timeout' | 'no-disposer' | 'error', elapsedMs, ... }.
     * After a timeout the disposer keeps running; await `probe.task` to drain it.
     */
    async dispose({ timeoutMs = 5000 } = {}) {
      const startedAt = performance.now()
      const result = fiber.dispose()
      // Cordis 3: `result` is a boolean. Its 'dispose' listeners run inside an async IIFE,
      // which starts synchronously, so probe.task is already set here if apply had run.
      // Cordis 4: `result` is a Promise that settles after the fiber's effects, including
      // the disposer returned by apply, have been awaited.
      const pending = CORDIS_MAJOR === 4
        ? Promise.resolve(result).then(() => probe.task, (error) => { probe.disposeError ??= error })
        : probe.task
      if (!pending) return { outcome: 'no-disposer', elapsedMs: performance.now() - startedAt, disposerCalls: 0, state: state() }
      const timer = delay(timeoutMs)
      const raced = await Promise.race([pending.then(() => 'done'), timer.promise.then(() => 'timeout')])
      timer.cancel()
      let outcome = raced
      if (raced === 'done' && probe.disposerCalls === 0) outcome = 'no-disposer'
      else if (raced === 'done' && probe.disposeError) outcome = 'error'
      return {
        outcome,
        elapsedMs: performance.now() - startedAt,
        disposerMs: probe.disposeEndedAt !== null && probe.disposeStartedAt !== null ? probe.disposeEndedAt - probe.disposeStartedAt : null,
        disposerCalls: probe.disposerCalls,
        error: probe.disposeError,
        state: state(),
      }
    },

    /** Remove the fake services and everything else under the root. */
    async close() {
      for (const fork of Object.values(serviceForks)) await fork.dispose()
      if (CORDIS_MAJOR === 3) await root.lifecycle.flush()
    },
  }
}
