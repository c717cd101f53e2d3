"""Periodic rescoring of dirty closed episodes (memos-core §5.10): the scan finds episodes whose
reward is missing or stale and scores them again, backs off after three failed automatic attempts
(1 h·2^min(n−3, 5), at most 24 h), dedupes scans 30 s apart, and manual paths ignore the back-off."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.dtos import FeedbackInput, Namespace, TurnInput, TurnResult
from stratamem.core import open_core
from stratamem.core.learning.rescore import after_attempt, backoff_ms, dirty_reason

NS = Namespace(agent_kind="hermes")
HOUR = 3_600_000


def now() -> int:
    return int(time.time() * 1000)


def _full(tmp_path: Path, **extra: Any) -> Any:
    return open_core(
        tmp_path,
        embedding__provider="none",
        algorithm__lightweight_memory__enabled=False,
        **extra,
    )


async def _scored_episode(core: Any, session: str = "s1") -> str:
    t = now()
    await core.turn_start(
        TurnInput(
            agent="hermes",
            session_id=session,
            user_text="Rotate the staging TLS certificate and reload nginx on the web hosts",
            ts=t,
        )
    )
    ack = await core.turn_end(
        TurnResult(
            agent="hermes",
            session_id=session,
            agent_text="Issued a new certificate, copied it to the web hosts and reloaded nginx.",
            ts=t + 4,
        )
    )
    await core.submit_feedback(
        FeedbackInput(episode_id=ack.episode_id, polarity="positive", magnitude=1.0, namespace=NS)
    )
    await core.close_session(session)
    await core.flush()
    assert _meta(core, ack.episode_id)["reward"]["r"] == 1.0
    return str(ack.episode_id)


def _meta(core: Any, eid: str) -> dict[str, Any]:
    rows = core.db.query("SELECT meta_json FROM episodes WHERE id=?", (eid,))
    meta: dict[str, Any] = json.loads(rows[0]["meta_json"])
    return meta


def _edit(
    core: Any, eid: str, *, meta: dict[str, Any] | None = None, extra_trace: str = ""
) -> None:
    def run(c: Any) -> None:
        row = c.execute(
            "SELECT meta_json, trace_ids_json FROM episodes WHERE id=?", (eid,)
        ).fetchone()
        m = json.loads(row[0])
        m.update(meta or {})
        ids = json.loads(row[1]) + ([extra_trace] if extra_trace else [])
        c.execute(
            "UPDATE episodes SET meta_json=?, trace_ids_json=? WHERE id=?",
            (json.dumps(m), json.dumps(ids), eid),
        )

    core.db.call(run)


async def test_the_periodic_scan_rescores_an_episode_marked_dirty(tmp_path: Path) -> None:
    async with _full(tmp_path, learning__rescore_interval_s=0.2) as core:
        eid = await _scored_episode(core)
        core.learner.clock = lambda: now() + HOUR  # past the minimum age of a closed episode
        first = _meta(core, eid)["reward"]["scored_at"]
        seen: list[dict[str, Any]] = []
        core.bus.add_observer(
            lambda e: seen.append(e.payload) if e.type == "reward.computed" else None
        )
        _edit(core, eid, meta={"reward_dirty": True})
        for _ in range(100):
            if any(p.get("trigger") == "rescore" for p in seen):
                break
            await asyncio.sleep(0.05)
        await core.learner.flush(5)
        meta = _meta(core, eid)
    assert [p["episode_id"] for p in seen if p.get("trigger") == "rescore"] == [eid]
    assert meta["reward_dirty"] is False and meta["reward"]["scored_at"] >= first
    assert meta["reward"]["trigger"] == "rescore" and meta.get("rescore") is None


async def test_a_scored_clean_episode_and_a_fresh_one_are_left_alone(tmp_path: Path) -> None:
    async with _full(tmp_path, learning__rescore_interval_s=0) as core:
        eid = await _scored_episode(core)
        core.learner.clock = lambda: now() + HOUR
        assert await core.learner.rescan(force=True) == []
        _edit(core, eid, meta={"reward_dirty": True})
        core.learner.clock = now  # closed moments ago: maybe still in its feedback window
        assert await core.learner.rescan(force=True) == []


async def test_failed_automatic_attempts_back_off_and_manual_rescoring_ignores_it(
    tmp_path: Path,
) -> None:
    async with _full(tmp_path, learning__rescore_interval_s=0) as core:
        eid = await _scored_episode(core)
        # a trace id the episode lists but the store no longer has: every rescore stays stale
        _edit(core, eid, extra_trace="tr_gone")
        clock = {"t": now() + HOUR}
        core.learner.clock = lambda: clock["t"]
        for attempt in (1, 2, 3):
            assert await core.learner.rescan(force=True) == [eid]
            await core.learner.flush(10)
            state = _meta(core, eid)["rescore"]
            assert state["attempts"] == attempt
        assert state["next_at"] == clock["t"] + HOUR  # 1 h·2^0 after the third failure
        assert await core.learner.rescan(force=True) == []  # backing off
        clock["t"] += HOUR
        assert await core.learner.rescan(force=True) == [eid]
        await core.learner.flush(10)
        state = _meta(core, eid)["rescore"]
        assert state["attempts"] == 4 and state["next_at"] == clock["t"] + 2 * HOUR
        # a manual rescore runs at once and does not count as an automatic attempt
        seen: list[str] = []
        core.bus.add_observer(
            lambda e: seen.append(e.payload["trigger"]) if e.type == "reward.computed" else None
        )
        core.learner.rescore_episode(eid)
        await core.learner.flush(10)
        assert seen == ["manual"]
        assert _meta(core, eid)["rescore"]["attempts"] == 4


async def test_scans_closer_than_the_dedupe_window_are_skipped(tmp_path: Path) -> None:
    async with _full(tmp_path, learning__rescore_interval_s=0) as core:
        eid = await _scored_episode(core)
        clock = {"t": now() + HOUR}
        core.learner.clock = lambda: clock["t"]
        assert await core.learner.rescan() == []  # clean: nothing to do, but the scan ran
        _edit(core, eid, meta={"reward_dirty": True})
        clock["t"] += 10_000
        assert await core.learner.rescan() == []  # 10 s later: deduplicated
        clock["t"] += 25_000
        assert await core.learner.rescan() == [eid]
        await core.learner.flush(10)


def _row(meta: dict[str, Any], **cols: Any) -> dict[str, Any]:
    base = {"status": "closed", "r_task": 0.5, "trace_ids_json": '["t1", "t2"]', "last_turn_ts": 5}
    return {**base, **cols, "meta_json": json.dumps({"lightweight_memory": False, **meta})}


REWARD = {"r": 0.5, "trace_count": 2, "scored_at": 10}


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (_row({"reward": REWARD}), None),
        (_row({"reward": REWARD, "reward_dirty": True}), "marked_dirty"),
        (_row({"close_reason": "finalized"}, r_task=None), "unscored"),
        (_row({"close_reason": "lightweight_backfill"}, r_task=None), None),
        (_row({"reward": {**REWARD, "trace_count": 1}}), "trace_count_changed"),
        (_row({"reward": REWARD}, last_turn_ts=11), "trace_newer_than_reward"),
        (_row({"reward": {"skipped": True, "reason": "trivial"}}, r_task=None), None),
        (_row({"reward": REWARD}, status="open", r_task=None), None),
        ({**_row({}, r_task=None), "meta_json": '{"close_reason": "finalized"}'}, None),
    ],
)
def test_dirty_episodes_are_recognised(row: dict[str, Any], reason: str | None) -> None:
    assert dirty_reason(row) == reason


def test_backoff_doubles_after_three_failures_and_caps_at_a_day() -> None:
    assert [backoff_ms(n) // HOUR for n in range(0, 10)] == [0, 0, 0, 1, 2, 4, 8, 16, 24, 24]
    state = None
    for _ in range(3):
        state = after_attempt(state, ok=False, manual=False, now=0)
    assert state is not None and state["attempts"] == 3 and state["next_at"] == HOUR
    assert after_attempt(state, ok=False, manual=True, now=5) == state
    assert after_attempt(state, ok=True, manual=False, now=5) is None
