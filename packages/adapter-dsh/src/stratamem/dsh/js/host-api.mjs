// host-api.mjs: every DSH name the plugin depends on, in one module (DSH >=0.1.0-rc.5 <0.2.0; the API
// moves: newer DSH has agent/prompt-submit instead of agent/pre-step). DSH's own helpers
// (createUserMessage from dsh-llm, defineTool from dsh-tools) are used when importable, else the
// same-shaped stand-ins below, so the plugin also runs in the Node test harness.

export const PLUGIN_NAME = 'stratamem'
export const EVENTS = Object.freeze({
  preStep: 'agent/pre-step',
  sessionEvent: 'session/event',
  sessionDisposed: 'session/disposed',
})
export const TYPES = Object.freeze({
  turnStart: 'turn/start',
  turnEnd: 'turn/end',
  userMessage: 'user/message',
  assistantMessage: 'assistant/message',
  toolCall: 'tool/call',
  toolResult: 'tool/result',
})
export const USER_SOURCE = 'user'
export const RECALL_SOURCE = Object.freeze({ kind: 'plugin', plugin: PLUGIN_NAME, form: 'recall' })
export const PROMPT_SECTION = Object.freeze({ name: `tool:${PLUGIN_NAME}`, order: 114 })

async function optional(specifier, member) {
  try {
    const mod = await import(specifier)
    return typeof mod[member] === 'function' ? mod[member] : null
  } catch {
    return null
  }
}

let counter = 0
const fallbackCreateUserMessage = ({ content, source }) => ({
  id: `stratamem-${process.pid}-${Date.now()}-${++counter}`,
  role: 'user',
  content,
  source,
})
const fallbackDefineTool = (def) => Object.freeze({ ...def })

export const createUserMessage =
  (await optional('@deepseek-ai/dsh-llm', 'createUserMessage')) ?? fallbackCreateUserMessage
export const defineTool = (await optional('@deepseek-ai/dsh-tools', 'defineTool')) ?? fallbackDefineTool

/** The session a pre-step payload or a tool execution refers to. */
export function sessionOf(holder) {
  return holder?.agent?.session ?? holder?.session ?? null
}

/** session.header may be an object or (in some releases) a method. */
export function headerOf(session) {
  const header = typeof session?.header === 'function' ? session.header() : session?.header
  return header && typeof header === 'object' ? header : {}
}

/** Plain text of a DSH message ({content: [{type: 'text', text}]}) or a string. */
export function textOf(message) {
  const content = message?.content
  if (typeof content === 'string') return content
  return (content || []).filter((c) => c && c.type === 'text' && typeof c.text === 'string').map((c) => c.text).join('\n')
}
