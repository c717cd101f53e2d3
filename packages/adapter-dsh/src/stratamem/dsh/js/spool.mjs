// spool.mjs: the durable hand-off of completed turns. session/event listeners are synchronous, so each
// turn is appended with a synchronous write + fsync before the listener returns; the service consumes
// the file idempotently by turn key and resumes it on start-up.
import fs from 'node:fs'
import path from 'node:path'

export function spoolPath(home) {
  return path.join(home, 'dsh', 'spool.jsonl')
}

export function appendSync(file, record) {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  const line = Buffer.from(JSON.stringify(record) + '\n', 'utf8')
  const fd = fs.openSync(file, 'a', 0o600)
  try {
    let written = 0
    while (written < line.length) written += fs.writeSync(fd, line, written)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** A JSON-safe copy of a session event (drops functions, cycles and unknown objects). */
export function plainEvent(event) {
  const pick = { type: event?.type, seq: event?.seq, time: event?.time, surfaceOp: event?.surfaceOp, data: event?.data }
  try {
    return JSON.parse(JSON.stringify(pick))
  } catch {
    return { type: pick.type, seq: pick.seq, time: pick.time }
  }
}
