// spool.mjs: the durable hand-off of completed turns, in the host kit's spool format
// (stratamem.contract.hostkit.spool): one JSON file per turn key, named sha256(key)[:32] + '.turn'.
// session/event listeners are synchronous, so each turn is written with synchronous temp write + fsync
// + rename + directory fsync before the listener returns; the service claims, applies and deletes it.
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

export function spoolDir(home) {
  return path.join(home, 'dsh', 'spool')
}

export function recordName(key) {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 32) + '.turn'
}

export function putSync(dir, record) {
  if (typeof record?.key !== 'string' || !record.key) throw new TypeError('a spool record needs a key')
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  const name = recordName(record.key)
  const tmp = path.join(dir, `.${name}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`)
  const data = Buffer.from(JSON.stringify(record), 'utf8')
  const fd = fs.openSync(tmp, 'wx', 0o600)
  try {
    let written = 0
    while (written < data.length) written += fs.writeSync(fd, data, written)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(tmp, path.join(dir, name))
  const dfd = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(dfd)
  } finally {
    fs.closeSync(dfd)
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
