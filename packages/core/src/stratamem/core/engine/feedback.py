"""Feedback: validate and store it, fold a trace's explicit feedback into its value, and hand it
to the learner (full mode), which turns it into experience and rescoring."""

from __future__ import annotations

import json
import sqlite3

from stratamem.contract.dtos import Feedback, FeedbackInput, Namespace, Trace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.engine import sessions, traces
from stratamem.core.engine.services import EngineServices
from stratamem.core.ids import new_id, now_ms
from stratamem.core.storage.ownership import owner_columns
from stratamem.core.telemetry import get_logger
from stratamem.core.validation import bad, check_id, check_text

_log = get_logger("core")


def trace_value(rows: list[tuple[str, float]]) -> float | None:
    """A trace's value from its explicit feedback: magnitude-weighted polarity in [-1, 1]
    (``None`` when there is no non-neutral feedback)."""
    num = sum((m if p == "positive" else -m) for p, m in rows if p != "neutral" and m > 0)
    den = sum(m for p, m in rows if p != "neutral" and m > 0)
    return max(-1.0, min(1.0, num / den)) if den > 0 else None


def _check(svc: EngineServices, feedback: FeedbackInput) -> float:
    if feedback.channel not in ("explicit", "implicit"):
        raise bad("channel must be explicit or implicit", field="channel")
    if feedback.polarity not in ("positive", "negative", "neutral"):
        raise bad("polarity must be positive, negative or neutral", field="polarity")
    mag = feedback.magnitude
    if isinstance(mag, bool) or not isinstance(mag, int | float) or not 0.0 <= float(mag) <= 1.0:
        raise bad("magnitude must be a number in [0, 1]", field="magnitude")
    if feedback.rationale is not None:
        check_text("rationale", feedback.rationale, svc.max_input, required=False)
    return float(mag)


async def submit_feedback(svc: EngineServices, feedback: FeedbackInput, ns: Namespace) -> Feedback:
    mag = _check(svc, feedback)
    trace: Trace | None = None
    if feedback.trace_id is not None:
        check_id("trace_id", feedback.trace_id)
        trace = await traces.get_trace(svc, feedback.trace_id, ns)
        if trace is None:
            raise StratamemError(
                ErrorCode.TRACE_NOT_FOUND,
                f"trace {feedback.trace_id!r} not found",
                {"trace_id": feedback.trace_id},
            )
    if feedback.episode_id is not None:
        check_id("episode_id", feedback.episode_id)
        if await sessions.get_episode(svc, feedback.episode_id, ns) is None:
            raise sessions.episode_not_found(feedback.episode_id)
    fb = Feedback(
        id=new_id("fb"),
        ts=feedback.ts or now_ms(),
        channel=feedback.channel,
        polarity=feedback.polarity,
        magnitude=mag,
        episode_id=feedback.episode_id or (trace.episode_id if trace else None),
        trace_id=feedback.trace_id,
        rationale=feedback.rationale,
        raw=feedback.raw,
    )
    own = owner_columns(ns)

    def store_fb(c: sqlite3.Connection) -> list[tuple[str, float]]:
        c.execute(
            "INSERT INTO feedback(id, owner_agent_kind, owner_profile_id, owner_workspace_id, ts,"
            " episode_id, trace_id, channel, polarity, magnitude, rationale, raw_json)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                fb.id,
                own["owner_agent_kind"],
                own["owner_profile_id"],
                own["owner_workspace_id"],
                fb.ts,
                fb.episode_id,
                fb.trace_id,
                fb.channel,
                fb.polarity,
                fb.magnitude,
                fb.rationale,
                json.dumps(fb.raw, default=str),
            ),
        )
        if fb.trace_id is None:
            return []
        return [
            (r[0], float(r[1]))
            for r in c.execute(
                "SELECT polarity, magnitude FROM feedback WHERE trace_id=? AND channel='explicit'",
                (fb.trace_id,),
            )
        ]

    rows = await svc.run_db(lambda: svc.db.call(store_fb))
    value = trace_value(rows) if trace is not None else None
    if trace is not None and value is not None:
        await svc.drain_journal(15.0)
        async with svc.journal.write_lock:
            await svc.store.update(
                "traces",
                trace.id,
                {"value": value, "r_human": value, "priority": max(trace.priority, abs(value))},
            )
    svc.bus.emit(
        "feedback.received",
        {"feedback_id": fb.id, "trace_id": fb.trace_id, "polarity": fb.polarity},
        namespace=ns,
    )
    if svc.learner is not None:  # full mode: experience, then score the episode now
        try:
            await svc.learner.feedback_stored(
                {
                    "id": fb.id,
                    "episode_id": fb.episode_id,
                    "trace_id": fb.trace_id,
                    "channel": fb.channel,
                    "polarity": fb.polarity,
                    "magnitude": fb.magnitude,
                    "rationale": fb.rationale,
                    "raw": fb.raw,
                    **own,
                }
            )
        except Exception as exc:
            _log.warning("learning.feedback_failed", error=str(exc))
    return fb
