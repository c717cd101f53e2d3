// tools.mjs: the six memory tools as DSH defineTool parameter maps (hosts.md §5.4). Their one
// definition is the host kit's table (stratamem.contract.hostkit.tools), which `stratamem dsh install`
// writes next to this file as memory-tools.json.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const TOOLS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'memory-tools.json')

export const TIMED_OUT_RESULT = Object.freeze({
  text: 'No relevant memories found.',
  hits: [],
  tierLatencyMs: { tier1: 0, tier2: 0, tier3: 0 },
  timedOut: true,
})

/** A JSON-schema tool definition as a DSH parameter map ({name: {type, required?, ...}}). */
export function toDshTool(def) {
  const required = new Set(def.parameters?.required ?? [])
  const parameters = Object.fromEntries(
    Object.entries(def.parameters?.properties ?? {}).map(([name, p]) => [name, required.has(name) ? { ...p, required: true } : { ...p }]),
  )
  return { name: def.name, description: def.description, concurrencySafe: def.concurrencySafe !== false, parameters }
}

export function loadTools(file = TOOLS_FILE) {
  return JSON.parse(fs.readFileSync(file, 'utf8')).map(toDshTool)
}
