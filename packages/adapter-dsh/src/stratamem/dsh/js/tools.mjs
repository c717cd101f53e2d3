// tools.mjs: the six memory tools' DSH definitions (defineTool parameter maps, hosts.md §5.4).
export const TIMED_OUT_RESULT = Object.freeze({
  text: 'No relevant memories found.',
  hits: [],
  tierLatencyMs: { tier1: 0, tier2: 0, tier3: 0 },
  timedOut: true,
})

const int = (description) => ({ type: 'integer', description })

export const TOOLS = [
  {
    name: 'memos_search',
    description: 'Search long-term memory (past tasks, experiences, environment knowledge).',
    concurrencySafe: true,
    parameters: {
      query: { type: 'string', required: true, description: 'A concise free-text memory query.' },
      maxResults: int('Maximum results per tier (1-50).'),
      tier1topK: int('Skills to return (0-100).'),
      tier2topK: int('Trace and episode memories to return (0-100).'),
      tier3topK: int('World models to return (0-100).'),
      sessionScope: { type: 'boolean', description: 'Only this session.' },
    },
  },
  {
    name: 'memos_get',
    description: 'Fetch one memory by id.',
    concurrencySafe: true,
    parameters: {
      id: { type: 'string', required: true },
      kind: { type: 'string', enum: ['trace', 'policy', 'world_model'] },
    },
  },
  {
    name: 'memos_timeline',
    description: 'The traces of one episode, in order.',
    concurrencySafe: true,
    parameters: { episodeId: { type: 'string', required: true }, limit: int('1-100, default 20') },
  },
  {
    name: 'memos_environment',
    description: 'Environment knowledge (world models).',
    concurrencySafe: true,
    parameters: { query: { type: 'string' }, limit: int('1-30, default 5') },
  },
  {
    name: 'memos_skill_list',
    description: 'List skills.',
    concurrencySafe: true,
    parameters: { status: { type: 'string', enum: ['candidate', 'active', 'archived'] }, limit: int('1-50, default 10') },
  },
  {
    name: 'memos_skill_get',
    description: 'Get a skill and record its use.',
    concurrencySafe: false,
    parameters: { id: { type: 'string', required: true } },
  },
]
