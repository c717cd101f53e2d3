// wire.mjs: a small protobuf (proto3) codec for the messages of proto/stratamem/hosts/dsh/v1/dsh.proto.
// The plugin has no npm dependencies; the schemas below mirror the .proto field numbers exactly.

const S = 'string', I = 'int', B = 'bool', D = 'double', M = 'message', R = 'repeated'

const SessionRef = { ref: [1, S], session_id: [2, S], agent_preset: [3, S], cwd: [4, S], profile_id: [5, S] }
const InputMessage = { source_kind: [1, S], text: [2, S] }
export const Schemas = {
  PreStepRequest: {
    session: [1, M, SessionRef], turn: [2, I], step: [3, I], decision_kind: [4, S],
    messages: [5, R, InputMessage], deadline_at: [6, I], recall_timeout_ms: [7, I],
    context_max_chars: [8, I], recall_enabled: [9, B],
  },
  PreStepResponse: { inject: [1, B], context: [2, S], skip_reason: [3, S], hit_count: [4, I], cut_off: [5, B], latency_ms: [6, D] },
  SpoolNotice: {},
  SpoolAck: { queued: [1, I] },
  SessionDisposedRequest: { session: [1, M, SessionRef] },
  Ack: {},
  ToolRequest: { session: [1, M, SessionRef], name: [2, S], args_json: [3, S], call_id: [4, S], deadline_at: [5, I], tool_result_max_chars: [6, I] },
  ToolResponse: { result_json: [1, S] },
  DrainRequest: { timeout_ms: [1, I], close_sessions: [2, B] },
  DrainResponse: { drained: [1, B], pending: [2, I], closed_sessions: [3, I] },
  StatusRequest: {},
  StatusResponse: { pending: [1, I], captured: [2, I], spool_path: [3, S], failed: [4, I] },
}

function varint(out, value) {
  let n = Math.max(0, Math.floor(Number(value) || 0))
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80)
    n = Math.floor(n / 0x80)
  }
  out.push(n)
}

function bytesField(out, num, buf) {
  varint(out, (num << 3) | 2)
  varint(out, buf.length)
  for (const b of buf) out.push(b)
}

export function encode(schema, obj = {}) {
  const out = []
  for (const [key, [num, type, sub]] of Object.entries(schema)) {
    const value = obj[key]
    if (value === undefined || value === null) continue
    if (type === S) {
      if (value !== '') bytesField(out, num, Buffer.from(String(value), 'utf8'))
    } else if (type === I) {
      if (value) { varint(out, num << 3); varint(out, value) }
    } else if (type === B) {
      if (value) { varint(out, num << 3); out.push(1) }
    } else if (type === D) {
      if (value) { varint(out, (num << 3) | 1); const b = Buffer.alloc(8); b.writeDoubleLE(value); out.push(...b) }
    } else if (type === M) {
      bytesField(out, num, encode(sub, value))
    } else if (type === R) {
      for (const item of value) bytesField(out, num, encode(sub, item))
    }
  }
  return Buffer.from(out)
}

function readVarint(buf, pos) {
  let result = 0, mul = 1, byte
  do {
    byte = buf[pos.i++]
    result += (byte & 0x7f) * mul
    mul *= 0x80
  } while (byte & 0x80)
  return result
}

function defaults(schema) {
  const obj = {}
  for (const [key, [, type]] of Object.entries(schema)) {
    obj[key] = type === S ? '' : type === B ? false : type === R ? [] : type === M ? null : 0
  }
  return obj
}

export function decode(schema, buf) {
  const byNum = new Map(Object.entries(schema).map(([key, spec]) => [spec[0], [key, ...spec.slice(1)]]))
  const obj = defaults(schema)
  const pos = { i: 0 }
  while (pos.i < buf.length) {
    const tag = readVarint(buf, pos)
    const num = Math.floor(tag / 8), wire = tag & 7
    const spec = byNum.get(num)
    let raw
    if (wire === 0) raw = readVarint(buf, pos)
    else if (wire === 1) { raw = buf.readDoubleLE(pos.i); pos.i += 8 }
    else if (wire === 2) { const len = readVarint(buf, pos); raw = buf.subarray(pos.i, pos.i + len); pos.i += len }
    else if (wire === 5) { raw = buf.readFloatLE(pos.i); pos.i += 4 }
    else throw new Error(`unsupported wire type ${wire}`)
    if (!spec) continue
    const [key, type, sub] = spec
    if (type === S) obj[key] = raw.toString('utf8')
    else if (type === B) obj[key] = raw !== 0
    else if (type === I || type === D) obj[key] = raw
    else if (type === M) obj[key] = decode(sub, raw)
    else if (type === R) obj[key].push(decode(sub, raw))
  }
  return obj
}
