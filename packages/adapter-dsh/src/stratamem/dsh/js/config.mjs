// config.mjs: the Cordis row's config with the reference defaults (memos-core §6.3). A plain function
// (Cordis 3 calls Config(value)) that also implements Standard Schema (Cordis 4 calls ~standard.validate).

const FIELDS = {
  enabled: ['boolean', true],
  profileId: ['string', 'default'],
  home: ['string', ''],
  recallEnabled: ['boolean', true],
  captureEnabled: ['boolean', true],
  toolsEnabled: ['boolean', true],
  hostLlmEnabled: ['boolean', true],
  viewerEnabled: ['boolean', true],
  viewerPort: ['integer', 18801, 1, 65535],
  recallTimeoutMs: ['integer', 3000, 100],
  contextMaxChars: ['integer', 6000, 256],
  toolResultMaxChars: ['integer', 1200, 128],
  failOnStartupError: ['boolean', false],
  command: ['string', 'stratamem'],
  startupTimeoutMs: ['integer', 30000, 1000],
  drainTimeoutMs: ['integer', 4000, 0],
}

export function Config(value) {
  if (value !== undefined && value !== null && (typeof value !== 'object' || Array.isArray(value))) {
    throw new TypeError('stratamem config must be an object')
  }
  const out = {}
  for (const [key, [type, fallback, min, max]] of Object.entries(FIELDS)) {
    const v = value?.[key]
    if (v === undefined || v === null) { out[key] = fallback; continue }
    if (type === 'integer') {
      if (!Number.isInteger(v)) throw new TypeError(`$.${key} expected integer but got ${JSON.stringify(v)}`)
      if (min !== undefined && v < min) throw new TypeError(`$.${key} must be at least ${min}`)
      if (max !== undefined && v > max) throw new TypeError(`$.${key} must be at most ${max}`)
    } else if (typeof v !== type) {
      throw new TypeError(`$.${key} expected ${type} but got ${JSON.stringify(v)}`)
    }
    out[key] = v
  }
  return out
}

Config['~standard'] = {
  version: 1,
  vendor: 'stratamem',
  validate(value) {
    try {
      return { value: Config(value) }
    } catch (error) {
      return { issues: [{ message: error.message }] }
    }
  },
}

/** min(recallTimeoutMs, 3000), at least 100: config may shorten the deadline, never extend it. */
export function recallBudgetMs(configured) {
  const ms = Number.isFinite(configured) && configured > 0 ? configured : 3000
  return Math.max(100, Math.min(ms, 3000))
}
