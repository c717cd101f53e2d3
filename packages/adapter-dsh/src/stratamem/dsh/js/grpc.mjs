// grpc.mjs: a minimal gRPC unary client over the home's Unix socket, on Node's built-in http2.
// Loopback only by construction: it never opens a TCP connection.
import http2 from 'node:http2'
import net from 'node:net'
import { Schemas, decode, encode } from './wire.mjs'

export const SERVICE = 'stratamem.dsh.v1.DshHost'

export class GrpcError extends Error {
  constructor(status, message) {
    super(`gRPC status ${status}: ${message}`)
    this.name = 'GrpcError'
    this.status = status
  }
}

export class DshClient {
  constructor(socketPath) {
    this.socketPath = socketPath
    this.session = null
    this.inflight = 0
    this.closed = false
  }

  _session() {
    const current = this.session
    if (current && !current.closed && !current.destroyed) return current
    const session = http2.connect('http://localhost', { createConnection: () => net.connect(this.socketPath) })
    session.on('error', () => {})
    session.on('close', () => { if (this.session === session) this.session = null })
    this.session = session
    return session
  }

  /** One unary call; `timeoutMs` becomes the gRPC deadline. Resolves with the decoded response. */
  call(method, request, { timeoutMs } = {}) {
    if (this.closed) return Promise.reject(new Error('stratamem client is closed'))
    const [reqType, respType] = METHODS[method]
    const body = encode(Schemas[reqType], request)
    return new Promise((resolve, reject) => {
      let session
      try { session = this._session() } catch (error) { reject(error); return }
      this.inflight++
      session.ref()
      const headers = {
        ':method': 'POST',
        ':path': `/${SERVICE}/${method}`,
        'content-type': 'application/grpc',
        te: 'trailers',
      }
      if (timeoutMs) headers['grpc-timeout'] = `${Math.max(1, Math.ceil(timeoutMs))}m`
      const stream = session.request(headers)
      const chunks = []
      let status = null
      let message = ''
      const read = (h) => {
        if (h['grpc-status'] !== undefined) {
          status = Number(h['grpc-status'])
          message = decodeURIComponent(String(h['grpc-message'] ?? ''))
        }
      }
      let settled = false
      const finish = (error, value) => {
        if (settled) return
        settled = true
        if (--this.inflight === 0 && this.session) this.session.unref()
        error ? reject(error) : resolve(value)
      }
      stream.on('response', read)
      stream.on('trailers', read)
      stream.on('data', (chunk) => chunks.push(chunk))
      stream.on('error', (error) => finish(error))
      stream.on('close', () => {
        if (status === null) return finish(new GrpcError(14, 'stream closed without status'))
        if (status !== 0) return finish(new GrpcError(status, message))
        const buf = Buffer.concat(chunks)
        const len = buf.length >= 5 ? buf.readUInt32BE(1) : 0
        try {
          finish(null, decode(Schemas[respType], buf.subarray(5, 5 + len)))
        } catch (error) {
          finish(error)
        }
      })
      const frame = Buffer.alloc(5 + body.length)
      frame.writeUInt32BE(body.length, 1)
      body.copy(frame, 5)
      stream.end(frame)
    })
  }

  close() {
    this.closed = true
    const session = this.session
    this.session = null
    if (session && !session.destroyed) session.close()
  }
}

const METHODS = {
  PreStep: ['PreStepRequest', 'PreStepResponse'],
  NotifySpool: ['SpoolNotice', 'SpoolAck'],
  SessionDisposed: ['SessionDisposedRequest', 'Ack'],
  Tool: ['ToolRequest', 'ToolResponse'],
  Drain: ['DrainRequest', 'DrainResponse'],
  Status: ['StatusRequest', 'StatusResponse'],
}
