// grpc.mjs: the DshHost client on @grpc/grpc-js over the home's Unix socket (loopback only by
// construction). The schema is dsh.desc, the descriptor set `stratamem dsh install` writes from the
// compiled dsh.proto, loaded by @grpc/proto-loader: the plugin's wire cannot drift from the proto.
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
export const DESCRIPTOR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'dsh.desc')
export const SERVICE = 'stratamem.dsh.v1.DshHost'
const DEADLINE_EXCEEDED = 4

let loaded = null
function load() {
  if (loaded) return loaded
  const grpc = require('@grpc/grpc-js')
  const loader = require('@grpc/proto-loader')
  const def = loader.loadFileDescriptorSetFromBuffer(fs.readFileSync(DESCRIPTOR), {
    keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
  })
  loaded = { grpc, Host: grpc.loadPackageDefinition(def).stratamem.dsh.v1.DshHost }
  return loaded
}

export class DshClient {
  constructor(socketPath) {
    const { grpc, Host } = load()
    this.client = new Host(`unix:${socketPath}`, grpc.credentials.createInsecure())
    this.closed = false
  }

  /**
   * One unary call; `timeoutMs` becomes the gRPC deadline. Resolves with the response object; a passed
   * deadline rejects with a `TimeoutError`, the same error the plugin's hard guard raises.
   */
  call(method, request, { timeoutMs } = {}) {
    if (this.closed) return Promise.reject(new Error('stratamem client is closed'))
    const options = timeoutMs ? { deadline: new Date(Date.now() + Math.max(1, timeoutMs)) } : {}
    return new Promise((resolve, reject) => {
      this.client[method](request, options, (error, response) => {
        if (error?.code === DEADLINE_EXCEEDED) error.name = 'TimeoutError'
        error ? reject(error) : resolve(response)
      })
    })
  }

  close() {
    this.closed = true
    this.client.close()
  }
}
