"""Which closed full-mode episodes need their reward (re)computed, and when to try again after
failures (memos-core §5.10): the periodic scan of the learner asks these pure rules.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: close reasons after which an episode is expected to carry a reward
SCORABLE_CLOSE = frozenset({"finalized", "abandoned", "missed_session_end"})
HOUR_MS = 3_600_000


def meta_of(row: Any) -> dict[str, Any]:
    try:
        meta = json.loads(row["meta_json"] or "{}")
    except (TypeError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def dirty_reason(row: Any) -> str | None:
    """Why a closed episode row (``episodes`` columns, a sqlite3.Row or a mapping) needs scoring, or ``None`` if it does not."""
    meta = meta_of(row)
    if row["status"] != "closed" or meta.get("lightweight_memory", True):
        return None
    reward = meta.get("reward") if isinstance(meta.get("reward"), dict) else None
    if meta.get("reward_dirty"):
        return "marked_dirty"
    if reward is not None and reward.get("skipped"):
        return None  # intentionally skipped (trivial, or no signal to learn from)
    trace_ids = json.loads(row["trace_ids_json"] or "[]")
    if not trace_ids:
        return None
    if row["r_task"] is None or reward is None:
        closed_as = {str(meta.get("close_reason")), str(meta.get("recovery_reason"))}
        return "unscored" if closed_as & SCORABLE_CLOSE else None
    if int(reward.get("trace_count") or 0) != len(trace_ids):
        return "trace_count_changed"
    scored_at = int(reward.get("scored_at") or 0)
    if int(row["last_turn_ts"] or 0) > scored_at:
        return "trace_newer_than_reward"
    return None


def backoff_ms(
    attempts: int, after: int = 3, base_ms: int = HOUR_MS, cap_ms: int = 24 * HOUR_MS
) -> int:
    """Wait before the next automatic attempt: none below ``after`` failures, then
    ``base·2^min(attempts−after, 5)`` capped at ``cap``."""
    if attempts < after:
        return 0
    return int(min(cap_ms, base_ms * 2 ** min(attempts - after, 5)))


def due(meta: Mapping[str, Any], now: int) -> bool:
    """An automatic attempt may run now (the back-off of earlier failures has passed)."""
    state = meta.get("rescore")
    if not isinstance(state, Mapping):
        return True
    return now >= int(state.get("next_at") or 0)


def after_attempt(
    state: Mapping[str, Any] | None,
    *,
    ok: bool,
    manual: bool,
    now: int,
    error: str | None = None,
    after: int = 3,
    base_ms: int = HOUR_MS,
    cap_ms: int = 24 * HOUR_MS,
) -> dict[str, Any] | None:
    """The episode's ``rescore`` state after an attempt: cleared on success; an automatic failure
    counts and sets the back-off; a manual failure changes nothing (manual paths ignore back-off)."""
    if ok:
        return None
    prev = dict(state) if isinstance(state, Mapping) else {}
    if manual:
        return prev or None
    attempts = int(prev.get("attempts") or 0) + 1
    return {
        "attempts": attempts,
        "last_attempt_at": now,
        "next_at": now + backoff_ms(attempts, after, base_ms, cap_ms),
        "last_error": (error or "still dirty")[:300],
    }
