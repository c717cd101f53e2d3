"""Typed DTOs of the Stratamem facade: frozen, snake_case, JSON-friendly.

These mirror the messages of ``proto/stratamem/v1`` one to one (the codec converts between them);
they carry no behaviour beyond trivial helpers. Times are epoch milliseconds, UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "REF_KINDS",
    "RETRIEVAL_REASONS",
    "ChatMessage",
    "CompletionCancel",
    "CompletionError",
    "CompletionRequest",
    "CompletionResponse",
    "CompletionUsage",
    "DecisionGuidance",
    "Episode",
    "Event",
    "Feedback",
    "FeedbackInput",
    "FlushResult",
    "Health",
    "HostLlmHello",
    "JsonValue",
    "ListQuery",
    "ModelHealth",
    "Namespace",
    "Ownership",
    "Policy",
    "RetrievalHit",
    "RetrievalQuery",
    "RetrievalResult",
    "Session",
    "Share",
    "Skill",
    "SkillGetOptions",
    "SubagentOutcome",
    "TierLatency",
    "ToolCall",
    "ToolOutcome",
    "TopK",
    "Trace",
    "TracePatch",
    "TurnEndAck",
    "TurnInput",
    "TurnResult",
    "TurnRoute",
    "WorldModel",
    "WorldModelEntry",
    "WorldModelStructure",
    "episode_cursor",
    "learned_cursor",
    "trace_cursor",
]

#: Any JSON-serialisable value (dict, list, str, int, float, bool, None).
JsonValue = Any

RetrievalReason = Literal[
    "turn_start", "tool_driven", "skill_invoke", "sub_agent", "decision_repair"
]
RETRIEVAL_REASONS: tuple[str, ...] = (
    "turn_start",
    "tool_driven",
    "skill_invoke",
    "sub_agent",
    "decision_repair",
)
RefKind = Literal["skill", "trace", "episode", "experience", "world_model"]
REF_KINDS: tuple[str, ...] = ("skill", "trace", "episode", "experience", "world_model")
ShareScopeName = Literal["private", "public", "hub"]
LifecycleStatus = Literal["candidate", "active", "archived"]
EpisodeStatus = Literal["open", "closed"]
FeedbackChannel = Literal["explicit", "implicit"]
Polarity = Literal["positive", "negative", "neutral"]
SubagentOutcomeKind = Literal["ok", "error", "timeout", "killed", "reset", "deleted", "unknown"]


@dataclass(frozen=True, slots=True)
class Namespace:
    """Who owns a memory: agent kind + profile (the visibility key), plus workspace and session key."""

    agent_kind: str = "unknown"
    profile_id: str = "default"
    profile_label: str | None = None
    workspace_id: str | None = None
    workspace_path: str | None = None
    session_key: str | None = None


@dataclass(frozen=True, slots=True)
class Ownership:
    owner_agent_kind: str = "unknown"
    owner_profile_id: str = "default"
    owner_workspace_id: str | None = None


@dataclass(frozen=True, slots=True)
class Share:
    scope: str = "private"
    target: str | None = None
    shared_at: int | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    input: JsonValue = None
    output: JsonValue = None
    error_code: str | None = None
    tool_call_id: str | None = None
    started_at: int | None = None
    ended_at: int | None = None
    thinking_before: str | None = None
    assistant_text_before: str | None = None


@dataclass(frozen=True, slots=True)
class TurnInput:
    """One user turn handed to ``turn_start`` / ``prepare_turn``."""

    agent: str
    session_id: str
    user_text: str
    ts: int
    namespace: Namespace | None = None
    turn_key: str | None = None
    episode_id: str | None = None
    context_hints: dict[str, JsonValue] = field(default_factory=dict)
    deadline_at: int | None = None
    llm_filter_malformed_retries: int | None = None


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The agent's answer to a turn, handed to ``turn_end``."""

    agent: str
    session_id: str
    agent_text: str
    ts: int
    episode_id: str | None = None
    namespace: Namespace | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    agent_thinking: str | None = None
    reflection: str | None = None
    context_hints: dict[str, JsonValue] = field(default_factory=dict)
    turn_key: str | None = None
    user_text: str | None = None


@dataclass(frozen=True, slots=True)
class TurnRoute:
    """Where a turn was routed: result of ``prepare_turn``."""

    session_id: str
    episode_id: str
    relation: str | None = None
    intent: str | None = None


@dataclass(frozen=True, slots=True)
class TurnEndAck:
    trace_id: str
    episode_id: str
    journal_seq: int = 0


@dataclass(frozen=True, slots=True)
class TopK:
    tier1: int | None = None
    tier2: int | None = None
    tier3: int | None = None


@dataclass(frozen=True, slots=True)
class RetrievalQuery:
    agent: str
    query: str
    namespace: Namespace | None = None
    session_id: str | None = None
    episode_id: str | None = None
    reason: str = "tool_driven"
    context_hints: dict[str, JsonValue] = field(default_factory=dict)
    deadline_at: int | None = None
    llm_filter_malformed_retries: int | None = None
    filters: dict[str, JsonValue] = field(default_factory=dict)
    top_k: TopK | None = None


@dataclass(frozen=True, slots=True)
class RetrievalHit:
    tier: int
    ref_id: str
    ref_kind: str
    score: float
    snippet: str
    owner: Ownership | None = None
    share_scope: str | None = None
    source_trace_id: str | None = None
    score_details: dict[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TierLatency:
    tier1: float = 0.0
    tier2: float = 0.0
    tier3: float = 0.0


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    query: RetrievalQuery
    hits: tuple[RetrievalHit, ...] = ()
    injected_context: str = ""
    tier_latency_ms: TierLatency = field(default_factory=TierLatency)
    #: True when the deadline cut ranking short and the result is a safe cut-off.
    cut_off: bool = False
    packet_id: str = ""


@dataclass(frozen=True, slots=True)
class Trace:
    """L1 trace: one step of an episode (state, action, observation, reflection, value)."""

    id: str
    episode_id: str
    session_id: str
    ts: int
    turn_id: int
    user_text: str = ""
    agent_text: str = ""
    summary: str | None = None
    tags: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    agent_thinking: str | None = None
    reflection: str | None = None
    value: float = 0.0
    alpha: float = 0.0
    r_human: float | None = None
    priority: float = 0.5
    error_signatures: tuple[str, ...] = ()
    share: Share | None = None
    owner: Ownership = field(default_factory=Ownership)
    episode_status: str | None = None


@dataclass(frozen=True, slots=True)
class DecisionGuidance:
    preference: tuple[str, ...] = ()
    anti_pattern: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Policy:
    """L2 policy ("experience"): a cross-task strategy induced from high-value traces."""

    id: str
    title: str
    trigger: str = ""
    procedure: str = ""
    verification: str = ""
    boundary: str = ""
    support: int = 0
    gain: float = 0.0
    status: str = "candidate"
    experience_type: str = "success_pattern"
    evidence_polarity: str = "positive"
    salience: float = 0.0
    confidence: float = 0.5
    skill_eligible: bool = True
    created_at: int = 0
    updated_at: int = 0
    edited_at: int | None = None
    guidance: DecisionGuidance = field(default_factory=DecisionGuidance)
    source_episode_ids: tuple[str, ...] = ()
    source_feedback_ids: tuple[str, ...] = ()
    source_trace_ids: tuple[str, ...] = ()
    share: Share | None = None
    owner: Ownership = field(default_factory=Ownership)


@dataclass(frozen=True, slots=True)
class WorldModelEntry:
    label: str
    description: str = ""
    evidence_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WorldModelStructure:
    environment: tuple[WorldModelEntry, ...] = ()
    inference: tuple[WorldModelEntry, ...] = ()
    constraints: tuple[WorldModelEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class WorldModel:
    """L3 world model: environment knowledge abstracted from active policies."""

    id: str
    title: str
    body: str = ""
    structure: WorldModelStructure = field(default_factory=WorldModelStructure)
    policy_ids: tuple[str, ...] = ()
    domain_tags: tuple[str, ...] = ()
    confidence: float = 0.5
    created_at: int = 0
    updated_at: int = 0
    version: int = 1
    status: str = "active"
    edited_at: int | None = None
    share: Share | None = None
    owner: Ownership = field(default_factory=Ownership)


@dataclass(frozen=True, slots=True)
class Skill:
    """A crystallised callable procedure with reliability η."""

    id: str
    name: str
    status: str = "candidate"
    invocation_guide: str = ""
    guidance: DecisionGuidance = field(default_factory=DecisionGuidance)
    evidence_anchors: tuple[str, ...] = ()
    eta: float = 0.0
    support: int = 0
    gain: float = 0.0
    trials_attempted: int = 0
    trials_passed: int = 0
    source_policy_ids: tuple[str, ...] = ()
    source_world_model_ids: tuple[str, ...] = ()
    created_at: int = 0
    updated_at: int = 0
    version: int = 1
    usage_count: int = 0
    last_used_at: int | None = None
    edited_at: int | None = None
    share: Share | None = None
    owner: Ownership = field(default_factory=Ownership)


@dataclass(frozen=True, slots=True)
class Episode:
    id: str
    session_id: str
    started_at: int
    status: str = "open"
    ended_at: int | None = None
    trace_ids: tuple[str, ...] = ()
    r_task: float | None = None
    close_reason: str | None = None
    topic_state: str | None = None
    turn_count: int = 0
    preview: str | None = None
    owner: Ownership = field(default_factory=Ownership)


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    agent: str
    started_at: int
    last_seen_at: int
    meta: dict[str, JsonValue] = field(default_factory=dict)
    owner: Ownership = field(default_factory=Ownership)


@dataclass(frozen=True, slots=True)
class Feedback:
    id: str
    ts: int
    channel: str = "explicit"
    polarity: str = "neutral"
    magnitude: float = 0.0
    episode_id: str | None = None
    trace_id: str | None = None
    rationale: str | None = None
    raw: JsonValue = None


@dataclass(frozen=True, slots=True)
class FeedbackInput:
    """What a caller submits; the core assigns ``id`` and (if absent) ``ts``."""

    channel: str = "explicit"
    polarity: str = "neutral"
    magnitude: float = 0.0
    episode_id: str | None = None
    trace_id: str | None = None
    rationale: str | None = None
    raw: JsonValue = None
    ts: int | None = None
    namespace: Namespace | None = None


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    session_id: str
    tool: str
    success: bool
    duration_ms: float = 0.0
    ts: int = 0
    episode_id: str | None = None
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class SubagentOutcome:
    agent: str
    session_id: str
    task: str
    result: str
    namespace: Namespace | None = None
    episode_id: str | None = None
    child_session_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    outcome: str = "unknown"
    error: str | None = None
    ts: int | None = None
    meta: dict[str, JsonValue] = field(default_factory=dict)
    turn_key: str | None = None


@dataclass(frozen=True, slots=True)
class ModelHealth:
    available: bool = False
    provider: str = "none"
    model: str = ""
    dimension: int = 0
    last_ok_at: int | None = None
    last_fallback_at: int | None = None
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class Health:
    ok: bool
    version: str
    uptime_ms: int = 0
    mode: str = "lightweight"
    mode_reason: str = ""
    home: str = ""
    namespace: Namespace | None = None
    llm: ModelHealth = field(default_factory=ModelHealth)
    embedder: ModelHealth = field(default_factory=ModelHealth)
    journal_backlog: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    #: namespaces holding an episode, newest activity first (a scoped token: only its own);
    #: empty from a service older than the field
    namespaces: tuple[Namespace, ...] = ()


@dataclass(frozen=True, slots=True)
class Event:
    """Envelope of one core event (see :mod:`stratamem.contract.events`)."""

    type: str
    ts: int
    seq: int
    payload: dict[str, JsonValue] = field(default_factory=dict)
    correlation_id: str | None = None
    epoch: str = ""


@dataclass(frozen=True, slots=True)
class ListQuery:
    """Paging and filters shared by every ``list_*`` call."""

    limit: int = 50
    offset: int = 0
    status: str | None = None
    session_id: str | None = None
    q: str | None = None
    namespace: Namespace | None = None
    include_all_namespaces: bool = False
    #: keyset cursor (proto ``ListQuery.after``): :func:`trace_cursor` of the previous page's last
    #: trace for ``list_traces``, :func:`episode_cursor` of its last episode for ``list_episodes``,
    #: :func:`learned_cursor` of its last row for ``list_policies``, ``list_world_models`` and
    #: ``list_skills``
    after: str | None = None


def trace_cursor(trace: Trace) -> str:
    """The ``ListQuery.after`` cursor that continues a trace listing after ``trace``."""
    return f"{trace.ts}:{trace.id}"


def episode_cursor(episode: Episode) -> str:
    """The ``ListQuery.after`` cursor that continues an episode listing after ``episode``."""
    return f"{episode.started_at}:{episode.id}"


def learned_cursor(item: Policy | WorldModel | Skill) -> str:
    """The ``ListQuery.after`` cursor that continues a policy, world model or skill listing after
    ``item`` (they page by creation time, which no later change moves)."""
    return f"{item.created_at}:{item.id}"


@dataclass(frozen=True, slots=True)
class TracePatch:
    summary: str | None = None
    user_text: str | None = None
    agent_text: str | None = None
    tags: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class SkillGetOptions:
    record_use: bool = False
    record_trial: bool = False
    session_id: str | None = None
    episode_id: str | None = None
    trace_id: str | None = None
    turn_id: int | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class FlushResult:
    applied: int = 0
    backlog: int = 0


# -- the host LLM reverse channel (``HostLlm`` service) ---------------------------------------


@dataclass(frozen=True, slots=True)
class HostLlmHello:
    """First message a host sends on the ``HostLlm`` stream."""

    host: str
    model: str = ""
    max_concurrency: int = 0
    #: offer the host's model as the core's LLM while connected, if its config names none
    as_default: bool = False


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """A completion the core asks a connected host to run (``timeout_ms`` None = 60 s)."""

    id: str
    messages: tuple[ChatMessage, ...] = ()
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_ms: int | None = None
    json_mode: bool = False


@dataclass(frozen=True, slots=True)
class CompletionUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class CompletionError:
    code: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class CompletionResponse:
    """The host's answer to one :class:`CompletionRequest` (same ``id``)."""

    id: str
    text: str = ""
    model: str = ""
    usage: CompletionUsage | None = None
    error: CompletionError | None = None
    duration_ms: float | None = None


@dataclass(frozen=True, slots=True)
class CompletionCancel:
    """The core withdraws request ``id``."""

    id: str
