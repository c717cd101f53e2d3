"""The start of a turn: validate, route (relation -> episode), record the user turn, then recall.

``prepare_turn`` is the routing alone; ``turn_start`` routes and recalls, once per turn key (a
retried start with the same key shares the first one's result).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import replace
from typing import Any

from stratamem.contract.dtos import Namespace, RetrievalQuery, RetrievalResult, TurnInput, TurnRoute
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core import routing
from stratamem.core.engine import recall, sessions
from stratamem.core.engine.services import EngineServices
from stratamem.core.ids import now_ms
from stratamem.core.storage.ownership import owner_columns
from stratamem.core.telemetry import get_logger, span
from stratamem.core.validation import bad, check_epoch_ms, check_id, check_text

_log = get_logger("core")


class TurnStarts:
    """In-flight and finished ``turn_start`` results per (session, turn key): the latest key of
    each session only, so a retry gets the same answer without a second route. Bounded: past
    ``max_sessions`` the least recently started session's finished result goes (a session that
    is never closed idles out; a late retry is routed idempotently and recalls again)."""

    def __init__(self, max_sessions: int = 1024) -> None:
        self.max_sessions = max_sessions
        self.results: dict[tuple[str, str], tuple[str, asyncio.Future[RetrievalResult]]] = {}

    def remember(
        self, key: tuple[str, str], entry: tuple[str, asyncio.Future[RetrievalResult]]
    ) -> None:
        """Hold ``key``'s result as its session's latest (dicts keep insertion order: oldest first)."""
        for k in [k for k in self.results if k[0] == key[0]]:
            del self.results[k]
        self.results[key] = entry
        while len(self.results) > self.max_sessions:
            oldest = next(iter(self.results))
            if not self.results[oldest][1].done():
                break  # in flight: it finishes on its own and goes with a later start
            del self.results[oldest]

    def forget(self, session_id: str) -> None:
        """Drop a closed session's finished result (an in-flight one finishes on its own)."""
        for key in [k for k, (_, fut) in self.results.items() if k[0] == session_id and fut.done()]:
            self.results.pop(key, None)

    def cancel_all(self) -> None:
        for key, (_, fut) in list(self.results.items()):
            if not fut.done():
                fut.cancel()
            self.results.pop(key, None)


def key_conflict(session_id: str, turn_key: str) -> StratamemError:
    return StratamemError(
        ErrorCode.CONFLICT,
        f"turn key {turn_key!r} was already used with a different user text",
        {"session_id": session_id, "turn_key": turn_key},
    )


def check_turn_input(svc: EngineServices, turn: TurnInput) -> None:
    check_id("agent", turn.agent)
    check_id("session_id", turn.session_id)
    check_text("user_text", turn.user_text, svc.max_input)
    if turn.turn_key is not None:
        check_id("turn_key", turn.turn_key)
    if turn.episode_id is not None:
        check_id("episode_id", turn.episode_id)
    check_epoch_ms("ts", turn.ts)
    if turn.deadline_at is not None and (
        isinstance(turn.deadline_at, bool) or not isinstance(turn.deadline_at, int)
    ):
        raise bad("deadline_at must be an integer (epoch ms)", field="deadline_at")


def intent_of(text: str) -> Any:
    """Intent (memos-core §5.1.2); ``None`` (full recall) if the classifier fails."""
    try:
        return routing.classify_intent(text)
    except Exception as exc:
        _log.warning("routing.intent_failed", error=str(exc))
        return None


def relation_of(
    svc: EngineServices, prev_user: str, prev_assistant: str, text: str, gap_ms: int
) -> Any:
    """Relation (§5.1.1); ``None`` (treated as follow_up) if the classifier fails."""
    max_gap = int(svc.config["session"]["merge_max_gap_ms"])
    try:
        return routing.classify_relation(
            text, prev_user, prev_assistant, gap_ms, max_gap_ms=max_gap
        )
    except Exception as exc:
        _log.warning("routing.relation_failed", error=str(exc))
    return None


def skip_recall(text: str, intent: Any, relation: Any) -> bool:
    """The injection scheduler (§5.7.1): chitchat/meta turns recall nothing."""
    if intent is None:
        return False
    try:
        profile = routing.query_profile(text)
        return bool(routing.schedule_injection(intent, relation, profile).skip)
    except Exception as exc:
        _log.warning("routing.schedule_failed", error=str(exc))
        return False


async def _episode_for(svc: EngineServices, turn: TurnInput, ns: Namespace) -> tuple[str, str]:
    """(episode id, relation): the explicit open episode, the open one this turn follows up, or
    a new one (closing the previous topic)."""
    relation = "bootstrap"
    if turn.episode_id:
        row = await sessions.episode_row(svc, turn.episode_id)
        if row is not None and row["session_id"] == turn.session_id and row["status"] == "open":
            return str(row["id"]), "explicit"
    open_eps = await sessions.open_episodes(svc, turn.session_id)
    if svc.lightweight or svc.config["session"]["follow_up_mode"] == "episode_per_turn":
        for ep in open_eps:
            await sessions.close_episode_row(
                svc,
                ep["id"],
                turn.session_id,
                "finalized",
                {"recovery_reason": "lightweight_boundary_before_new_turn"},
            )
        relation = "new_task" if open_eps else "bootstrap"
    elif open_eps:
        ep = open_eps[-1]
        turns = await sessions.episode_turns(svc, str(ep["id"]))
        prev_user = next((t["content"] for t in reversed(turns) if t["role"] == "user"), "")
        prev_asst = next((t["content"] for t in reversed(turns) if t["role"] == "assistant"), "")
        gap = turn.ts - int(ep["last_turn_ts"] or ep["started_at"])
        rel = relation_of(svc, prev_user[:1000], prev_asst[:2000], turn.user_text, gap)
        relation = str(getattr(rel, "kind", "follow_up"))
        max_gap = int(svc.config["session"]["merge_max_gap_ms"])
        keep = (
            relation in ("revision", "follow_up", "unknown")
            and (max_gap == 0 or gap <= max_gap)
            and len(turns) < int(svc.config["session"]["max_turns_per_episode"])
        )
        if keep:
            return str(ep["id"]), relation
        await sessions.close_episode_row(svc, ep["id"], turn.session_id, "finalized")
    eid = await sessions.new_episode(svc, turn.session_id, ns, turn.user_text, relation, turn.ts)
    return eid, relation


async def route(svc: EngineServices, turn: TurnInput, ns: Namespace) -> tuple[TurnRoute, bool]:
    """ensure session -> relation/episode routing -> record the user turn -> intent."""
    await sessions.ensure_session(svc, turn.agent, turn.session_id, ns, {})
    if svc.learner is not None:  # the new user turn as implicit feedback on the previous one
        try:
            await svc.learner.user_turn(turn.session_id, turn.user_text, owner_columns(ns))
        except Exception as exc:
            _log.warning("learning.implicit_feedback_failed", error=str(exc))
    eid, relation = await _episode_for(svc, turn, ns)
    intent_obj = intent_of(turn.user_text)
    intent = str(getattr(intent_obj, "kind", "unknown"))
    conf = float(getattr(intent_obj, "confidence", 0.4))
    skip = skip_recall(turn.user_text, intent_obj, None)

    def record(c: sqlite3.Connection) -> None:
        c.execute(
            "INSERT INTO episode_turns(episode_id, role, content, ts, meta_json) VALUES (?,?,?,?,?)",
            (eid, "user", turn.user_text, turn.ts, json.dumps({"turn_key": turn.turn_key})),
        )
        c.execute("UPDATE episodes SET last_turn_ts=? WHERE id=?", (turn.ts, eid))
        c.execute(
            "UPDATE sessions SET last_seen_at=?, last_turn_key=?, last_turn_text=?,"
            " last_turn_episode=? WHERE id=?",
            (now_ms(), turn.turn_key, turn.user_text, eid, turn.session_id),
        )

    await svc.run_db(lambda: svc.db.call(record))
    await sessions.patch_episode_meta(
        svc, eid, {"intent": {"kind": intent, "confidence": conf}, "relation": relation}
    )
    return TurnRoute(
        session_id=turn.session_id, episode_id=eid, relation=relation, intent=intent
    ), skip


async def idempotent_route(
    svc: EngineServices, turn: TurnInput, ns: Namespace
) -> tuple[TurnRoute, bool]:
    """Same turn key on the session as last time -> the same route; a key whose turn was already
    captured routes to its episode without writing. Also returns whether recall is skipped."""
    if turn.turn_key:
        key = turn.turn_key
        captured = await svc.run_db(lambda: svc.db.journal_by_turn_key(turn.session_id, key))
        if captured is not None:  # a replayed turn (ingest re-run, spool resume): no new writes
            return TurnRoute(session_id=turn.session_id, episode_id=captured["episode_id"]), True
        srow = await sessions.session_row(svc, turn.session_id)
        if srow is not None and srow["last_turn_key"] == turn.turn_key:
            if srow["last_turn_text"] != turn.user_text:
                raise key_conflict(turn.session_id, turn.turn_key)
            return (
                TurnRoute(session_id=turn.session_id, episode_id=srow["last_turn_episode"]),
                skip_recall(turn.user_text, intent_of(turn.user_text), None),
            )
    return await route(svc, turn, ns)


async def prepare_turn(svc: EngineServices, turn: TurnInput, ns: Namespace) -> TurnRoute:
    check_turn_input(svc, turn)
    with span("prepare_turn", session=turn.session_id):
        async with svc.session_lock(turn.session_id):
            routed, _ = await idempotent_route(svc, turn, ns)
    return routed


async def turn_start(
    svc: EngineServices, starts: TurnStarts, turn: TurnInput, ns: Namespace
) -> RetrievalResult:
    """Route the turn, then recall for it within its deadline (``check_turn_input`` first)."""
    query = RetrievalQuery(
        agent=turn.agent,
        query=turn.user_text,
        namespace=ns,
        session_id=turn.session_id,
        episode_id=turn.episode_id,
        reason="turn_start",
        context_hints=dict(turn.context_hints),
        deadline_at=turn.deadline_at,
        llm_filter_malformed_retries=turn.llm_filter_malformed_retries,
    )
    if svc.deadline_left_s(turn.deadline_at) <= 0:
        # documented degraded result: nothing routed, nothing stored, safe empty cut-off
        return RetrievalResult(query=query, cut_off=True, packet_id=f"empty-{now_ms()}")
    key = (turn.session_id, turn.turn_key) if turn.turn_key else None
    fut: asyncio.Future[RetrievalResult]
    if key is not None and key in starts.results:
        text, fut = starts.results[key]
        if text != turn.user_text:
            raise key_conflict(turn.session_id, key[1])
        return await asyncio.shield(fut)
    fut = asyncio.get_running_loop().create_future()
    if key is not None:
        starts.remember(key, (turn.user_text, fut))
    try:
        with span("turn_start", session=turn.session_id, deadline_at=turn.deadline_at):
            # recall reads neither the episode nor anything routing writes (the session is the
            # turn's own), so the query embedding and the tiers run while routing commits to SQLite
            early = (
                None
                if skip_recall(turn.user_text, intent_of(turn.user_text), None)
                else asyncio.ensure_future(recall.retrieve_safely(svc, query, ns))
            )
            if early is not None:  # its outcome is read below, or it is cancelled: never unread
                early.add_done_callback(lambda t: t.cancelled() or t.exception())
            try:
                async with svc.session_lock(turn.session_id):
                    routed, skip = await idempotent_route(svc, turn, ns)
            except BaseException:
                if early is not None:
                    early.cancel()
                raise
            rq = replace(query, session_id=routed.session_id, episode_id=routed.episode_id)
            if skip:
                if early is not None:
                    early.cancel()
                result = RetrievalResult(query=rq, packet_id=f"empty:{routed.episode_id}")
            else:
                got = await (early or recall.retrieve_safely(svc, rq, ns))
                result = replace(got, query=rq)
            result = await recall.with_repair(svc, result, routed.session_id)
        fut.set_result(result)
        return result
    except BaseException as exc:
        if key is not None:
            starts.results.pop(key, None)
        if not fut.done():
            fut.set_exception(exc)
            fut.exception()  # mark retrieved
        raise
