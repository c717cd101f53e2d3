"""The event catalogue: every type the core may emit, with what its payload carries.

Only events that really happen are listed; a core test proves each one is emitted by a scenario.
Adding a type is compatible; removing or renaming one is breaking.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EventType:
    name: str
    summary: str
    payload: tuple[str, ...]


CATALOGUE: tuple[EventType, ...] = (
    EventType(
        "system.started", "the core opened its home and is serving", ("home", "mode", "version")
    ),
    EventType("system.shutdown", "the core is shutting down after draining", ("reason",)),
    EventType("system.error", "a background stage failed and degraded", ("stage", "error")),
    EventType("session.opened", "a session was created or re-opened", ("session_id", "agent")),
    EventType("session.closed", "a session was closed", ("session_id", "reason")),
    EventType(
        "episode.opened",
        "an episode (task/topic) started",
        ("episode_id", "session_id", "relation"),
    ),
    EventType("episode.closed", "an episode was finalized", ("episode_id", "session_id", "reason")),
    EventType(
        "turn.captured",
        "turn_end made a turn durable in the journal",
        ("session_id", "episode_id", "trace_id", "journal_seq"),
    ),
    EventType(
        "trace.created",
        "a trace row became searchable in the store",
        ("trace_id", "episode_id", "session_id"),
    ),
    EventType("trace.updated", "a trace's display fields were edited", ("trace_id",)),
    EventType("trace.deleted", "traces were deleted", ("trace_ids",)),
    EventType(
        "feedback.received",
        "feedback was stored (and applied to its trace)",
        ("feedback_id", "trace_id", "polarity"),
    ),
    EventType("retrieval.triggered", "a retrieval started", ("reason", "session_id")),
    EventType(
        "retrieval.hit",
        "a retrieval returned at least one hit",
        ("reason", "session_id", "hits", "tiers"),
    ),
    EventType("retrieval.empty", "a retrieval returned nothing", ("reason", "session_id")),
    EventType(
        "reward.computed",
        "full mode scored an episode (LLM rubric or explicit feedback)",
        ("episode_id", "reward", "source", "trigger"),
    ),
    EventType(
        "trace.value_updated",
        "reward was back-propagated into the values and priorities of an episode's traces",
        ("episode_id", "trace_ids", "values"),
    ),
    EventType(
        "policy.trace_associated",
        "a valuable trace was linked to an existing policy",
        ("policy_id", "trace_id", "score"),
    ),
    EventType(
        "policy.induced",
        "a new L2 policy (or feedback experience) was created",
        ("policy_id", "title", "signature", "episode_ids"),
    ),
    EventType(
        "policy.revised",
        "a policy's gain, support, status or guidance changed",
        ("policy_id", "gain", "support", "status"),
    ),
    EventType(
        "world_model.abstracted",
        "a new L3 world model was abstracted from a policy cluster",
        ("world_model_id", "title", "policy_ids", "episode_ids"),
    ),
    EventType(
        "world_model.revised",
        "a world model absorbed a cluster (new version)",
        ("world_model_id", "version", "policy_ids"),
    ),
    EventType(
        "skill.crystallized",
        "a skill was crystallised (or rebuilt) from a policy",
        ("skill_id", "name", "policy_id", "eta", "version"),
    ),
    EventType("skill.failed", "skill crystallisation gave up on a policy", ("policy_id", "reason")),
    EventType(
        "skill.eta_updated",
        "a skill's η/status moved (trial, thumb or lifecycle tick)",
        ("skill_id", "eta", "status", "cause"),
    ),
    EventType("skill.archived", "a skill fell below the η floor", ("skill_id", "reason")),
    EventType(
        "repair.generated",
        "a failure burst produced prefer/avoid guidance for the session's next turn",
        ("repair_id", "session_id", "tool", "source", "policy_ids"),
    ),
)

EVENT_TYPES: frozenset[str] = frozenset(e.name for e in CATALOGUE)


def describe(name: str) -> EventType:
    for e in CATALOGUE:
        if e.name == name:
            return e
    raise KeyError(name)
