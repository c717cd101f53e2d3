"""``LocalCore``: the in-process ``MemoryCore`` over one home (SQLite + LanceDB + capture journal).

Opened by ``open_core(home, **config_overrides)``. asyncio-native: SQLite runs on one dedicated
thread, CPU work (embedding) in a small bounded executor, LanceDB through its async API.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from stratamem.contract.dtos import (
    Episode,
    Event,
    Feedback,
    FeedbackInput,
    FlushResult,
    Health,
    ListQuery,
    ModelHealth,
    Namespace,
    Policy,
    RetrievalQuery,
    RetrievalResult,
    Skill,
    SkillGetOptions,
    SubagentOutcome,
    ToolCall,
    ToolOutcome,
    Trace,
    TracePatch,
    TurnEndAck,
    TurnInput,
    TurnResult,
    TurnRoute,
    WorldModel,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core import __version__, capture, retrieval, routing
from stratamem.core.config import ensure_config_file, load_config
from stratamem.core.events import EventBus
from stratamem.core.home import prepare_home, resolve_home
from stratamem.core.ids import new_id, now_ms
from stratamem.core.storage.journal import JournalWriter, payload_json
from stratamem.core.storage.lance import LanceStore, ids_where
from stratamem.core.storage.lock import HomeLock
from stratamem.core.storage.rows import (
    episode_from_row,
    owner_columns,
    policy_from_row,
    skill_from_row,
    trace_from_row,
    visible,
    world_model_from_row,
)
from stratamem.core.storage.sqlite import Database
from stratamem.core.storage.visibility import visibility_where
from stratamem.core.telemetry import get_logger, span
from stratamem.core.validation import bad, check_id, check_limit, check_text, check_top_k

T = TypeVar("T")
_log = get_logger("core")

#: columns read for trace DTOs (never the vectors)
TRACE_COLUMNS = (
    "id",
    "episode_id",
    "session_id",
    "ts",
    "turn_id",
    "user_text",
    "agent_text",
    "summary",
    "reflection",
    "agent_thinking",
    "tool_calls_json",
    "tags",
    "error_signatures",
    "value",
    "alpha",
    "r_human",
    "priority",
    "search_text",
    "owner_agent_kind",
    "owner_profile_id",
    "owner_workspace_id",
    "share_scope",
    "share_target",
    "shared_at",
)


def _load_embedder(section: dict[str, Any]) -> Any:
    if section.get("provider") in ("none", "", None):
        return None
    from stratamem.core import embedding

    loader: Callable[[dict[str, Any]], Any] = embedding.load_embedder
    return loader(section)


def _load_llm(cfg: dict[str, Any]) -> Any:
    from stratamem.core.llm import load_llm

    if not cfg["llm"].get("provider"):
        return None
    try:
        return load_llm(cfg)
    except StratamemError:
        raise
    except Exception as exc:  # an optional provider must not keep the core from starting
        _log.warning("llm.unavailable", error=str(exc))
        return None


@dataclass(frozen=True, slots=True)
class _TurnDraft:
    """What capture needs for one user turn."""

    user_text: str
    agent_text: str
    tool_calls: tuple[ToolCall, ...]
    ts: int
    turn_id: int
    agent_thinking: str | None = None
    reflection: str | None = None
    lightweight: bool = True


class LocalCore:
    """In-process implementation of ``stratamem.contract.MemoryCore``."""

    def __init__(
        self,
        home: Path,
        config: dict[str, Any],
        *,
        db: Database,
        store: LanceStore,
        lock: HomeLock,
        embedder: Any,
        llm: Any,
        bus: EventBus | None = None,
        owns_embedder: bool = True,
    ) -> None:
        self.home = home
        self.config = config
        self.db = db
        self.store = store
        self.lock = lock
        self.embedder = embedder
        self.llm = llm
        self.bus = bus or EventBus()
        self.lightweight = bool(config["algorithm"]["lightweight_memory"]["enabled"])
        self.mode_reason = "algorithm.lightweight_memory.enabled"
        self.learner: Any = None
        if not self.lightweight:
            from stratamem.core.learning import Learner

            self.learner = Learner(self)
        self._db_exec = ThreadPoolExecutor(1, thread_name_prefix="stratamem-sqlite")
        self._cpu_exec = ThreadPoolExecutor(
            int(config["runtime"]["executor_workers"]), thread_name_prefix="stratamem-cpu"
        )
        self.journal = JournalWriter(
            db,
            store,
            self._embed_documents if embedder is not None else None,
            self.bus,
            self._db_exec,
            self._cpu_exec,
            config["journal"],
        )
        self._started_at = time.monotonic()
        self._shut = False
        self._session_locks: dict[str, asyncio.Lock] = {}
        self._turn_results: dict[tuple[str, str], tuple[str, asyncio.Future[RetrievalResult]]] = {}
        self._tool_steps: dict[str, int] = {}
        self._maintenance: asyncio.Task[None] | None = None
        self._embed_health = ModelHealth(
            available=embedder is not None,
            provider=str(config["embedding"]["provider"] or "none"),
            model=str(getattr(embedder, "model", "")),
            dimension=int(getattr(embedder, "dimension", 0) or 0),
        )
        self.namespace = Namespace()
        #: journal entries found unapplied at start-up (replayed by the writer)
        self.replayed = 0

    # ------------------------------------------------------------------ plumbing
    async def _db(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._db_exec, fn)

    async def _cpu(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._cpu_exec, fn)

    def _embed_documents(self, texts: list[str]) -> np.ndarray:
        out: np.ndarray = self.embedder.embed_documents(texts)
        return out

    def _alive(self) -> None:
        if self._shut:
            raise StratamemError(ErrorCode.ALREADY_SHUT_DOWN, "the core has been shut down")

    def _lock_for(self, session_id: str) -> asyncio.Lock:
        lk = self._session_locks.get(session_id)
        if lk is None:
            lk = self._session_locks[session_id] = asyncio.Lock()
        return lk

    def _ns(self, ns: Namespace | None) -> Namespace:
        return ns or self.namespace

    def _max_input(self) -> int:
        return int(self.config["capture"]["max_input_chars"])

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        replayed = await self.journal.start()
        self.replayed = replayed
        if self.learner is not None:
            self.learner.start()
        await self._recover_open_episodes()
        self._maintenance = asyncio.create_task(self._maintenance_loop(), name="stratamem-maint")
        self.bus.emit(
            "system.started",
            {"home": str(self.home), "mode": self._mode(), "version": __version__},
        )
        _log.info("core.started", home=str(self.home), replayed=replayed, mode=self._mode())

    def _mode(self) -> str:
        return "lightweight" if self.lightweight else "full"

    async def _recover_open_episodes(self) -> None:
        """memos-core §1.1: lightweight closes every open episode; full mode finalizes those with
        traces or older than the stale window, and marks the rest interrupted."""
        stale_ms = max(2 * int(self.config["session"]["merge_max_gap_ms"]), 4 * 3_600_000)
        now = now_ms()
        rows = await self._db(
            lambda: self.db.query("SELECT * FROM episodes WHERE status='open' LIMIT 500")
        )
        for r in rows:
            has_traces = bool(json.loads(r["trace_ids_json"] or "[]"))
            old = now - int(r["last_turn_ts"] or r["started_at"]) > stale_ms
            if self.lightweight:
                await self._close_episode_row(r["id"], r["session_id"], "lightweight_backfill")
            elif has_traces or old:
                await self._close_episode_row(
                    r["id"], r["session_id"], "finalized", {"recovery_reason": "missed_session_end"}
                )
            else:
                await self._patch_episode_meta(
                    r["id"],
                    {"topic_state": "interrupted", "pause_reason": "startup_recovered_open_topic"},
                )

    async def shutdown(self) -> None:
        if self._shut:
            return
        self._shut = True
        if self.learner is not None:
            await self.learner.stop()
        try:
            await self.journal.stop(15.0)
        finally:
            if self._maintenance is not None:
                self._maintenance.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._maintenance
            for key, (_, fut) in list(self._turn_results.items()):
                if not fut.done():
                    fut.cancel()
                self._turn_results.pop(key, None)
            with contextlib.suppress(Exception):
                self.bus.emit("system.shutdown", {"reason": "shutdown"})
            self.store.close()
            self._db_exec.submit(self.db.close).result()
            self._db_exec.shutdown(wait=True)
            self._cpu_exec.shutdown(wait=True)
            self.lock.release()

    async def flush(self, timeout_s: float | None = None) -> FlushResult:
        self._alive()
        try:
            applied = await self.journal.drain(timeout_s)
        except TimeoutError:
            applied = 0
        if self.learner is not None:  # fire feedback windows, run reward/L2/L3/skills now
            await self.learner.flush(timeout_s)
        return FlushResult(applied=applied, backlog=len(self.journal.pending))

    async def _drain_journal(self, timeout_s: float) -> None:
        """Internal read-your-writes barrier: the journal only (learning keeps running in the
        background; the public ``flush`` also settles it)."""
        self._alive()
        with contextlib.suppress(TimeoutError):
            await self.journal.drain(timeout_s)

    async def health(self) -> Health:
        self._alive()
        counts = {"traces": await self.store.count("traces")}
        for t in ("policies", "world_models", "skills"):
            counts[t] = await self.store.count(t)
        llm_health = ModelHealth(
            available=self.llm is not None,
            provider=str(self.config["llm"]["provider"] or "none"),
            model=str(self.config["llm"]["model"]),
        )
        return Health(
            ok=not self._shut,
            version=__version__,
            uptime_ms=int((time.monotonic() - self._started_at) * 1000),
            mode=self._mode(),
            mode_reason=self.mode_reason,
            home=str(self.home),
            namespace=self.namespace,
            llm=llm_health,
            embedder=self._embed_health,
            journal_backlog=len(self.journal.pending),
            counts=counts,
        )

    async def _maintenance_loop(self) -> None:
        interval = float(self.config["storage"]["optimize_interval_s"])
        after_rows = int(self.config["storage"]["optimize_after_rows"])
        last = time.monotonic()
        while True:
            await asyncio.sleep(min(interval, 5.0))
            try:
                await self.store.ensure_indexes()
                due = time.monotonic() - last >= interval
                if due or self.store.rows_since_optimize >= after_rows:
                    await self.store.optimize()
                    last = time.monotonic()
                await self._retry_embeddings()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.warning("maintenance.failed", error=str(exc))

    async def _retry_embeddings(self) -> None:
        if self.embedder is None:
            return
        due = await self._db(lambda: self.db.embedding_retries_due(25))
        for job in due:
            try:
                text = str(job["source_text"])
                vec = (await self._cpu(functools.partial(self._embed_documents, [text])))[0]
                await self.store.update(
                    "traces", job["target_id"], {job["vector_field"]: vec.tolist()}
                )
                status, err = "succeeded", None
            except Exception as exc:
                err = str(exc)
                status = "failed" if job["attempts"] + 1 >= job["max_attempts"] else "pending"
            attempts = job["attempts"] + 1
            backoff = min(3_600_000, 60_000 * 2 ** (attempts - 1))
            params = (status, attempts, err, now_ms() + backoff, job["id"])
            await self._db(functools.partial(self._update_retry, params))

    def _update_retry(self, params: tuple[Any, ...]) -> None:
        self.db.call(
            lambda c: c.execute(
                "UPDATE embedding_retry_queue SET status=?, attempts=?, last_error=?,"
                " next_attempt_at=? WHERE id=?",
                params,
            )
        )

    # ------------------------------------------------------------------ sessions / episodes
    async def open_session(
        self,
        agent: str,
        session_id: str | None = None,
        namespace: Namespace | None = None,
        meta: dict[str, object] | None = None,
    ) -> str:
        self._alive()
        check_id("agent", agent)
        if session_id is not None:
            check_id("session_id", session_id)
        ns = namespace or Namespace(agent_kind=agent)
        sid, _created = await self._ensure_session(agent, session_id, ns, meta or {})
        return sid

    async def _ensure_session(
        self, agent: str, session_id: str | None, ns: Namespace, meta: dict[str, Any]
    ) -> tuple[str, bool]:
        sid = session_id or new_id("se")
        ts = now_ms()
        own = owner_columns(ns)

        def run(c: sqlite3.Connection) -> bool:
            row = c.execute("SELECT id FROM sessions WHERE id=?", (sid,)).fetchone()
            if row:
                c.execute(
                    "UPDATE sessions SET last_seen_at=?, closed_at=NULL WHERE id=?", (ts, sid)
                )
                return False
            c.execute(
                "INSERT INTO sessions(id, agent, owner_agent_kind, owner_profile_id,"
                " owner_workspace_id, started_at, last_seen_at, meta_json) VALUES (?,?,?,?,?,?,?,?)",
                (
                    sid,
                    agent,
                    own["owner_agent_kind"],
                    own["owner_profile_id"],
                    own["owner_workspace_id"],
                    ts,
                    ts,
                    json.dumps({**meta, "namespace": own}, default=str),
                ),
            )
            return True

        created = await self._db(lambda: self.db.call(run))
        if created:
            self.bus.emit("session.opened", {"session_id": sid, "agent": agent})
        return sid, created

    async def _session_row(self, session_id: str) -> sqlite3.Row | None:
        rows = await self._db(
            lambda: self.db.query("SELECT * FROM sessions WHERE id=?", (session_id,))
        )
        return rows[0] if rows else None

    async def close_session(self, session_id: str, reason: str = "client") -> None:
        self._alive()
        check_id("session_id", session_id)
        if await self._session_row(session_id) is None:
            raise StratamemError(
                ErrorCode.SESSION_NOT_FOUND,
                f"session {session_id!r} not found",
                {"session_id": session_id},
            )
        async with self._lock_for(session_id):
            for ep in await self._open_episodes(session_id):
                has_traces = bool(json.loads(ep["trace_ids_json"] or "[]"))
                if self.lightweight or has_traces:
                    await self._close_episode_row(ep["id"], session_id, "finalized")
                else:
                    await self._patch_episode_meta(ep["id"], {"topic_state": "paused"})
            ts = now_ms()
            await self._db(
                lambda: self.db.call(
                    lambda c: c.execute(
                        "UPDATE sessions SET closed_at=? WHERE id=?", (ts, session_id)
                    )
                )
            )
        await self._drain_journal(15.0)
        self.bus.emit("session.closed", {"session_id": session_id, "reason": reason})

    async def _open_episodes(self, session_id: str) -> list[sqlite3.Row]:
        return await self._db(
            lambda: self.db.query(
                "SELECT * FROM episodes WHERE session_id=? AND status='open' ORDER BY started_at",
                (session_id,),
            )
        )

    async def _episode_row(self, episode_id: str) -> sqlite3.Row | None:
        rows = await self._db(
            lambda: self.db.query("SELECT * FROM episodes WHERE id=?", (episode_id,))
        )
        return rows[0] if rows else None

    async def _new_episode(
        self, session_id: str, ns: Namespace, user_text: str | None, relation: str, ts: int
    ) -> str:
        eid = new_id("ep")
        own = owner_columns(ns)
        meta = {
            "initial_user_text": (user_text or "(adapter-initiated)")[:2000],
            "relation": relation,
            "topic_state": "active",
            "lightweight_memory": self.lightweight,
            "turn_count": 0,
        }
        await self._db(
            lambda: self.db.call(
                lambda c: c.execute(
                    "INSERT INTO episodes(id, session_id, owner_agent_kind, owner_profile_id,"
                    " owner_workspace_id, started_at, status, meta_json, last_turn_ts)"
                    " VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        eid,
                        session_id,
                        own["owner_agent_kind"],
                        own["owner_profile_id"],
                        own["owner_workspace_id"],
                        ts,
                        "open",
                        json.dumps(meta),
                        ts,
                    ),
                )
            )
        )
        self.bus.emit(
            "episode.opened", {"episode_id": eid, "session_id": session_id, "relation": relation}
        )
        return eid

    async def _patch_episode_meta(self, episode_id: str, patch: dict[str, Any]) -> None:
        def run(c: sqlite3.Connection) -> None:
            row = c.execute("SELECT meta_json FROM episodes WHERE id=?", (episode_id,)).fetchone()
            meta = json.loads(row[0] or "{}") if row else {}
            meta.update(patch)
            c.execute("UPDATE episodes SET meta_json=? WHERE id=?", (json.dumps(meta), episode_id))

        await self._db(lambda: self.db.call(run))

    async def _close_episode_row(
        self, episode_id: str, session_id: str, reason: str, extra: dict[str, Any] | None = None
    ) -> None:
        ts = now_ms()

        def run(c: sqlite3.Connection) -> bool:
            row = c.execute(
                "SELECT status, meta_json FROM episodes WHERE id=?", (episode_id,)
            ).fetchone()
            if row is None or row[0] == "closed":
                return False
            meta = json.loads(row[1] or "{}")
            meta.update({"close_reason": reason, "topic_state": "ended", **(extra or {})})
            c.execute(
                "UPDATE episodes SET status='closed', ended_at=?, meta_json=? WHERE id=?",
                (ts, json.dumps(meta), episode_id),
            )
            return True

        if await self._db(lambda: self.db.call(run)):
            self.bus.emit(
                "episode.closed",
                {"episode_id": episode_id, "session_id": session_id, "reason": reason},
            )
            if self.learner is not None:  # topic end: reflect pass, then the feedback window
                self.learner.episode_finalized(episode_id)

    async def open_episode(
        self, session_id: str, user_message: str | None = None, episode_id: str | None = None
    ) -> str:
        self._alive()
        check_id("session_id", session_id)
        if user_message is not None:
            check_text("user_message", user_message, self._max_input(), required=False)
        srow = await self._session_row(session_id)
        if srow is None:
            raise StratamemError(
                ErrorCode.SESSION_NOT_FOUND,
                f"session {session_id!r} not found",
                {"session_id": session_id},
            )
        ns = Namespace(agent_kind=srow["owner_agent_kind"], profile_id=srow["owner_profile_id"])
        async with self._lock_for(session_id):
            eid = await self._new_episode(session_id, ns, user_message, "explicit", now_ms())
            if episode_id:
                await self._patch_episode_meta(eid, {"adapter_supplied_id": episode_id})
        return eid

    async def close_episode(self, episode_id: str) -> None:
        self._alive()
        check_id("episode_id", episode_id)
        row = await self._episode_row(episode_id)
        if row is None:
            raise StratamemError(
                ErrorCode.EPISODE_NOT_FOUND,
                f"episode {episode_id!r} not found",
                {"episode_id": episode_id},
            )
        await self._close_episode_row(episode_id, row["session_id"], "finalized")
        await self._drain_journal(15.0)

    async def list_episodes(self, query: ListQuery) -> list[Episode]:
        self._alive()
        check_limit(query.limit, query.offset)
        ns = self._ns(query.namespace)
        where = [visibility_where(ns, all_namespaces=query.include_all_namespaces)]
        params: list[Any] = []
        if query.session_id:
            where.append("session_id = ?")
            params.append(query.session_id)
        if query.status:
            where.append("status = ?")
            params.append(query.status)
        sql = (
            "SELECT * FROM episodes WHERE "
            + " AND ".join(where)
            + " ORDER BY started_at DESC LIMIT ? OFFSET ?"
        )
        rows = await self._db(lambda: self.db.query(sql, [*params, query.limit, query.offset]))
        return [episode_from_row(r) for r in rows]

    async def get_episode(
        self, episode_id: str, namespace: Namespace | None = None
    ) -> Episode | None:
        self._alive()
        check_id("episode_id", episode_id)
        sql = f"SELECT * FROM episodes WHERE id=? AND {visibility_where(self._ns(namespace))}"
        rows = await self._db(lambda: self.db.query(sql, (episode_id,)))
        return episode_from_row(rows[0]) if rows else None

    # ------------------------------------------------------------------ routing
    def _deadline_left_s(self, deadline_at: int | None) -> float:
        if deadline_at is None:
            return float(self.config["retrieval"]["default_deadline_ms"]) / 1000
        return (deadline_at - now_ms()) / 1000

    def _check_turn_input(self, turn: TurnInput) -> None:
        check_id("agent", turn.agent)
        check_id("session_id", turn.session_id)
        check_text("user_text", turn.user_text, self._max_input())
        if turn.turn_key is not None:
            check_id("turn_key", turn.turn_key)
        if turn.episode_id is not None:
            check_id("episode_id", turn.episode_id)
        if isinstance(turn.ts, bool) or not isinstance(turn.ts, int) or turn.ts < 0:
            raise bad("ts must be a non-negative integer (epoch ms)", field="ts")
        if turn.deadline_at is not None and (
            isinstance(turn.deadline_at, bool) or not isinstance(turn.deadline_at, int)
        ):
            raise bad("deadline_at must be an integer (epoch ms)", field="deadline_at")

    def _intent(self, text: str) -> Any:
        """Intent (memos-core §5.1.2); ``None`` (full recall) if the classifier fails."""
        try:
            return routing.classify_intent(text)
        except Exception as exc:
            _log.warning("routing.intent_failed", error=str(exc))
            return None

    def _relation(self, prev_user: str, prev_assistant: str, text: str, gap_ms: int) -> Any:
        """Relation (§5.1.1); ``None`` (treated as follow_up) if the classifier fails."""
        max_gap = int(self.config["session"]["merge_max_gap_ms"])
        try:
            return routing.classify_relation(
                text, prev_user, prev_assistant, gap_ms, max_gap_ms=max_gap
            )
        except Exception as exc:
            _log.warning("routing.relation_failed", error=str(exc))
        return None

    def _skip_recall(self, text: str, intent: Any, relation: Any) -> bool:
        """The injection scheduler (§5.7.1): chitchat/meta turns recall nothing."""
        if intent is None:
            return False
        try:
            profile = routing.query_profile(text)
            return bool(routing.schedule_injection(intent, relation, profile).skip)
        except Exception as exc:
            _log.warning("routing.schedule_failed", error=str(exc))
            return False

    async def _route(self, turn: TurnInput, ns: Namespace) -> tuple[TurnRoute, bool]:
        """ensure session -> relation/episode routing -> record the user turn -> intent."""
        await self._ensure_session(turn.agent, turn.session_id, ns, {})
        if self.learner is not None:  # the new user turn as implicit feedback on the previous one
            try:
                await self.learner.user_turn(turn.session_id, turn.user_text, owner_columns(ns))
            except Exception as exc:
                _log.warning("learning.implicit_feedback_failed", error=str(exc))
        relation = "bootstrap"
        episode_id: str | None = None
        if turn.episode_id:
            row = await self._episode_row(turn.episode_id)
            if row is not None and row["session_id"] == turn.session_id and row["status"] == "open":
                episode_id, relation = row["id"], "explicit"
        if episode_id is None:
            open_eps = await self._open_episodes(turn.session_id)
            if self.lightweight or self.config["session"]["follow_up_mode"] == "episode_per_turn":
                for ep in open_eps:
                    await self._close_episode_row(
                        ep["id"],
                        turn.session_id,
                        "finalized",
                        {"recovery_reason": "lightweight_boundary_before_new_turn"},
                    )
                relation = "new_task" if open_eps else "bootstrap"
            elif open_eps:
                ep = open_eps[-1]
                ep_id = str(ep["id"])
                turns = await self._db(
                    lambda: self.db.query(
                        "SELECT role, content, ts FROM episode_turns WHERE episode_id=? ORDER BY id",
                        (ep_id,),
                    )
                )
                prev_user = next((t["content"] for t in reversed(turns) if t["role"] == "user"), "")
                prev_asst = next(
                    (t["content"] for t in reversed(turns) if t["role"] == "assistant"), ""
                )
                gap = turn.ts - int(ep["last_turn_ts"] or ep["started_at"])
                rel = self._relation(prev_user[:1000], prev_asst[:2000], turn.user_text, gap)
                relation = str(getattr(rel, "kind", "follow_up"))
                max_gap = int(self.config["session"]["merge_max_gap_ms"])
                keep = (
                    relation in ("revision", "follow_up", "unknown")
                    and (max_gap == 0 or gap <= max_gap)
                    and len(turns) < int(self.config["session"]["max_turns_per_episode"])
                )
                if keep:
                    episode_id = ep["id"]
                else:
                    await self._close_episode_row(ep["id"], turn.session_id, "finalized")
        if episode_id is None:
            episode_id = await self._new_episode(
                turn.session_id, ns, turn.user_text, relation, turn.ts
            )
        intent_obj = self._intent(turn.user_text)
        intent = str(getattr(intent_obj, "kind", "unknown"))
        conf = float(getattr(intent_obj, "confidence", 0.4))
        skip = self._skip_recall(turn.user_text, intent_obj, None)
        eid = episode_id

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

        await self._db(lambda: self.db.call(record))
        await self._patch_episode_meta(
            eid, {"intent": {"kind": intent, "confidence": conf}, "relation": relation}
        )
        return TurnRoute(
            session_id=turn.session_id,
            episode_id=eid,
            relation=relation,
            intent=intent,
        ), skip

    async def _idempotent_route(self, turn: TurnInput, ns: Namespace) -> tuple[TurnRoute, bool]:
        """Same turn key on the session as last time -> the same route; a key whose turn was already
        captured routes to its episode without writing. Also returns whether recall is skipped."""
        if turn.turn_key:
            key = turn.turn_key
            captured = await self._db(lambda: self.db.journal_by_turn_key(turn.session_id, key))
            if captured is not None:  # a replayed turn (ingest re-run, spool resume): no new writes
                return (
                    TurnRoute(session_id=turn.session_id, episode_id=captured["episode_id"]),
                    True,
                )
            srow = await self._session_row(turn.session_id)
            if srow is not None and srow["last_turn_key"] == turn.turn_key:
                if srow["last_turn_text"] != turn.user_text:
                    raise StratamemError(
                        ErrorCode.CONFLICT,
                        f"turn key {turn.turn_key!r} was already used with a different user text",
                        {"session_id": turn.session_id, "turn_key": turn.turn_key},
                    )
                return (
                    TurnRoute(session_id=turn.session_id, episode_id=srow["last_turn_episode"]),
                    self._skip_recall(turn.user_text, self._intent(turn.user_text), None),
                )
        return await self._route(turn, ns)

    async def prepare_turn(self, turn: TurnInput) -> TurnRoute:
        self._alive()
        self._check_turn_input(turn)
        ns = turn.namespace or Namespace(agent_kind=turn.agent)
        with span("prepare_turn", session=turn.session_id):
            async with self._lock_for(turn.session_id):
                route, _ = await self._idempotent_route(turn, ns)
        return route

    async def turn_start(self, turn: TurnInput) -> RetrievalResult:
        self._alive()
        self._check_turn_input(turn)
        ns = turn.namespace or Namespace(agent_kind=turn.agent)
        self.namespace = ns
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
        if self._deadline_left_s(turn.deadline_at) <= 0:
            # documented degraded result: nothing routed, nothing stored, safe empty cut-off
            return RetrievalResult(query=query, cut_off=True, packet_id=f"empty-{now_ms()}")
        key = (turn.session_id, turn.turn_key) if turn.turn_key else None
        fut: asyncio.Future[RetrievalResult]
        if key is not None and key in self._turn_results:
            text, fut = self._turn_results[key]
            if text != turn.user_text:
                raise StratamemError(
                    ErrorCode.CONFLICT,
                    f"turn key {turn.turn_key!r} was already used with a different user text",
                    {"session_id": turn.session_id, "turn_key": turn.turn_key},
                )
            return await asyncio.shield(fut)
        fut = asyncio.get_running_loop().create_future()
        if key is not None:
            self._turn_results = {k: v for k, v in self._turn_results.items() if k[0] != key[0]}
            self._turn_results[key] = (turn.user_text, fut)
        try:
            with span("turn_start", session=turn.session_id, deadline_at=turn.deadline_at):
                async with self._lock_for(turn.session_id):
                    route, skip = await self._idempotent_route(turn, ns)
                routed = replace(query, session_id=route.session_id, episode_id=route.episode_id)
                if skip:
                    result = RetrievalResult(query=routed, packet_id=f"empty:{route.episode_id}")
                else:
                    result = await self._retrieve_safely(routed, ns)
                result = await self._with_repair(result, route.session_id)
            fut.set_result(result)
            return result
        except BaseException as exc:
            if key is not None:
                self._turn_results.pop(key, None)
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()  # mark retrieved
            raise

    # ------------------------------------------------------------------ retrieval
    async def search(self, query: RetrievalQuery) -> RetrievalResult:
        self._alive()
        check_id("agent", query.agent)
        check_text("query", query.query, self._max_input())
        check_top_k(query.top_k, int(self.config["retrieval"]["max_top_k"]))
        if query.reason not in (
            "turn_start",
            "tool_driven",
            "skill_invoke",
            "sub_agent",
            "decision_repair",
        ):
            raise bad(f"unknown retrieval reason {query.reason!r}", field="reason")
        ns = query.namespace or self.namespace
        if query.session_id is None:
            query = replace(query, session_id=f"adhoc-session-{os.urandom(4).hex()}")
        if self._deadline_left_s(query.deadline_at) <= 0:
            return RetrievalResult(query=query, cut_off=True, packet_id=f"empty-{now_ms()}")
        with span("search", reason=query.reason, session=query.session_id):
            result = await self._retrieve_safely(query, ns)
        if query.reason == "sub_agent" and query.session_id:
            result = await self._with_repair(result, query.session_id)
        return result

    async def _with_repair(self, result: RetrievalResult, session_id: str) -> RetrievalResult:
        """Decision repair (memos-core §5.8, fixed): the session's undelivered repair packet is
        prepended to the injected context of its next turn start / sub-agent start."""
        if self.learner is None:
            return result
        try:
            block = await self.learner.repair_packet(session_id)
        except Exception as exc:
            _log.warning("learning.repair_packet_failed", error=str(exc))
            return result
        if not block:
            return result
        text = block + ("\n\n" + result.injected_context if result.injected_context else "")
        return replace(result, injected_context=text)

    async def _retrieve_safely(self, query: RetrievalQuery, ns: Namespace) -> RetrievalResult:
        """Never raises for a retrieval failure: an empty result instead (memos-core §1.3)."""
        self.bus.emit(
            "retrieval.triggered", {"reason": query.reason, "session_id": query.session_id}
        )
        try:
            result = await self._retrieve(query, ns)
        except StratamemError as exc:
            if exc.code == ErrorCode.INVALID_ARGUMENT:
                raise
            _log.warning("retrieval.failed", error=str(exc))
            result = RetrievalResult(query=query, packet_id=f"empty-{now_ms()}")
        except Exception as exc:
            _log.warning("retrieval.failed", error=str(exc))
            result = RetrievalResult(query=query, packet_id=f"empty-{now_ms()}")
        if result.hits:
            self.bus.emit(
                "retrieval.hit",
                {
                    "reason": query.reason,
                    "session_id": query.session_id,
                    "hits": len(result.hits),
                    "tiers": sorted({h.tier for h in result.hits}),
                },
            )
        else:
            self.bus.emit(
                "retrieval.empty", {"reason": query.reason, "session_id": query.session_id}
            )
        return result

    async def wait_for_writes(self, deadline_at: int | None) -> list[dict[str, Any]]:
        """Read-your-writes: wait (within ~half the remaining budget) for every acknowledged turn to
        be applied; return the rows still pending so a reader can search them too."""
        target = self.journal.max_seq()
        if target:
            budget = max(0.0, self._deadline_left_s(deadline_at) * 0.5)
            await self.journal.wait_applied(target, budget)
        return self.journal.pending_rows("trace")

    async def embed_query(self, text: str) -> np.ndarray | None:
        if self.embedder is None:
            return None
        vec: np.ndarray = await self._cpu(lambda: self.embedder.embed_query(text))
        return vec

    async def _retrieve(self, query: RetrievalQuery, ns: Namespace) -> RetrievalResult:
        pending = await self.wait_for_writes(query.deadline_at)
        pending = [r for r in pending if visible(r, ns)]
        out: RetrievalResult = await retrieval.retrieve(
            core=self, query=query, namespace=ns, pending=pending, config=self.config
        )
        return out

    # ------------------------------------------------------------------ turn end
    def _check_turn_result(self, result: TurnResult) -> None:
        check_id("agent", result.agent)
        check_id("session_id", result.session_id)
        check_text("agent_text", result.agent_text, self._max_input(), required=False)
        if result.user_text is not None:
            check_text("user_text", result.user_text, self._max_input(), required=False)
        if result.agent_thinking is not None:
            check_text("agent_thinking", result.agent_thinking, self._max_input(), required=False)
        if result.reflection is not None:
            check_text("reflection", result.reflection, self._max_input(), required=False)
        if result.episode_id is not None:
            check_id("episode_id", result.episode_id)
        if result.turn_key is not None:
            check_id("turn_key", result.turn_key)
        if isinstance(result.ts, bool) or not isinstance(result.ts, int) or result.ts < 0:
            raise bad("ts must be a non-negative integer (epoch ms)", field="ts")
        for i, call in enumerate(result.tool_calls):
            if not isinstance(call, ToolCall):
                raise bad(f"tool_calls[{i}] must be a ToolCall", field=f"tool_calls[{i}]")
            check_id(f"tool_calls[{i}].name", call.name)
            for attr in ("output", "error_code"):
                v = getattr(call, attr)
                if isinstance(v, str):
                    check_text(f"tool_calls[{i}].{attr}", v, self._max_input(), required=False)
        if (
            not result.agent_text.strip()
            and not result.tool_calls
            and not (result.user_text or "").strip()
        ):
            raise bad("turn has no content (empty agent text, no tool calls, no user text)")

    async def turn_end(self, result: TurnResult) -> TurnEndAck:
        """Durable before it returns: the turn is committed (fsync'd) to the SQLite journal."""
        self._alive()
        self._check_turn_result(result)
        ns = result.namespace or Namespace(agent_kind=result.agent)
        with span("turn_end", session=result.session_id):
            async with self._lock_for(result.session_id):
                return await self._turn_end_locked(result, ns)

    async def _turn_end_locked(self, result: TurnResult, ns: Namespace) -> TurnEndAck:
        if result.turn_key:
            prev = await self._db(
                lambda: self.db.journal_by_turn_key(result.session_id, result.turn_key or "")
            )
            if prev is not None:
                return TurnEndAck(
                    trace_id=prev["target_id"],
                    episode_id=prev["episode_id"],
                    journal_seq=prev["seq"],
                )
        await self._ensure_session(result.agent, result.session_id, ns, {})
        episode_id: str | None = None
        if result.episode_id:
            row = await self._episode_row(result.episode_id)
            if row is None or row["session_id"] != result.session_id:
                raise StratamemError(
                    ErrorCode.EPISODE_NOT_FOUND,
                    f"episode {result.episode_id!r} not found in session {result.session_id!r}",
                    {"episode_id": result.episode_id},
                )
            episode_id = row["id"]
            if row["status"] == "closed":  # delayed agent end: reopen, capture, re-finalize
                await self._db(
                    lambda: self.db.call(
                        lambda c: c.execute(
                            "UPDATE episodes SET status='open', ended_at=NULL WHERE id=?",
                            (row["id"],),
                        )
                    )
                )
                await self._patch_episode_meta(row["id"], {"delayed_agent_end_recovered": True})
        else:
            open_eps = await self._open_episodes(result.session_id)
            if open_eps:
                episode_id = open_eps[-1]["id"]
        if episode_id is None:
            if not (result.user_text or "").strip():
                raise StratamemError(
                    ErrorCode.EPISODE_NOT_FOUND,
                    f"session {result.session_id!r} has no open episode (call turn_start first "
                    "or pass user_text)",
                    {"session_id": result.session_id},
                )
            episode_id = await self._new_episode(
                result.session_id, ns, result.user_text, "bootstrap", result.ts
            )
        eid = episode_id
        turns = await self._db(
            lambda: self.db.query(
                "SELECT role, content, ts FROM episode_turns WHERE episode_id=? ORDER BY id", (eid,)
            )
        )
        # the user text of this turn: explicit, else the user turns since the last assistant turn
        users: list[sqlite3.Row] = []
        for t in reversed(turns):
            if t["role"] == "assistant":
                break
            if t["role"] == "user":
                users.insert(0, t)
        user_text = (
            result.user_text
            if result.user_text is not None
            else "\n---\n".join(u["content"] for u in users)
        )
        turn_id = int(users[0]["ts"]) if users else result.ts
        rows = self._capture(
            _TurnDraft(
                user_text=user_text,
                agent_text=result.agent_text,
                tool_calls=tuple(result.tool_calls),
                ts=result.ts,
                turn_id=turn_id,
                agent_thinking=result.agent_thinking,
                reflection=result.reflection,
                lightweight=self.lightweight,
            ),
            result,
            ns,
            eid,
        )
        own = owner_columns(ns)
        entries = []
        for r in rows:
            r.update(
                id=new_id("tr"),
                episode_id=eid,
                session_id=result.session_id,
                share_scope="private",
                share_target=None,
                shared_at=None,
                **own,
            )
            entries.append({"kind": "trace", "target_id": r["id"], "table": "traces", "payload": r})
        need_user_turn = result.user_text is not None and not users

        def commit(c: sqlite3.Connection) -> list[int]:
            if need_user_turn:
                c.execute(
                    "INSERT INTO episode_turns(episode_id, role, content, ts) VALUES (?,?,?,?)",
                    (eid, "user", user_text, turn_id),
                )
            for call in result.tool_calls:
                out = (
                    call.output
                    if isinstance(call.output, str)
                    else json.dumps(call.output, default=str)
                )
                c.execute(
                    "INSERT INTO episode_turns(episode_id, role, content, ts, meta_json) VALUES (?,?,?,?,?)",
                    (
                        eid,
                        "tool",
                        (out or "")[:2000],
                        result.ts,
                        json.dumps({"name": call.name, "error_code": call.error_code}),
                    ),
                )
            c.execute(
                "INSERT INTO episode_turns(episode_id, role, content, ts) VALUES (?,?,?,?)",
                (eid, "assistant", result.agent_text, result.ts),
            )
            seqs = []
            for i, e in enumerate(entries):
                cur = c.execute(
                    "INSERT INTO journal(kind, target_id, session_id, episode_id, turn_key,"
                    " payload_json, created_at) VALUES (?,?,?,?,?,?,?)",
                    (
                        e["kind"],
                        e["target_id"],
                        result.session_id,
                        eid,
                        result.turn_key if i == len(entries) - 1 else None,
                        payload_json(e),
                        now_ms(),
                    ),
                )
                seqs.append(int(cur.lastrowid or 0))
            row = c.execute(
                "SELECT trace_ids_json, meta_json FROM episodes WHERE id=?", (eid,)
            ).fetchone()
            ids = json.loads(row[0] or "[]") + [e["target_id"] for e in entries]
            meta = json.loads(row[1] or "{}")
            meta["turn_count"] = int(meta.get("turn_count", 0)) + 1
            c.execute(
                "UPDATE episodes SET trace_ids_json=?, meta_json=?, last_turn_ts=? WHERE id=?",
                (json.dumps(ids), json.dumps(meta), result.ts, eid),
            )
            return seqs

        seqs = await self._db(lambda: self.db.call(commit))
        for e, s in zip(entries, seqs, strict=True):
            e["seq"] = s
        self.journal.add_committed(entries)
        trace_id = entries[-1]["target_id"] if entries else ""
        seq = seqs[-1] if seqs else 0
        self.bus.emit(
            "turn.captured",
            {
                "session_id": result.session_id,
                "episode_id": eid,
                "trace_id": trace_id,
                "journal_seq": seq,
            },
        )
        return TurnEndAck(trace_id=trace_id, episode_id=eid, journal_seq=seq)

    def _capture(
        self, draft: _TurnDraft, result: TurnResult, ns: Namespace, episode_id: str
    ) -> list[dict[str, Any]]:
        """Trace rows (no vectors; ``_embed`` says what the writer embeds)."""
        drafts = capture.build_trace_drafts(
            draft.user_text,
            replace(result, namespace=ns, episode_id=episode_id),
            lightweight=self.lightweight,
            config=self.config,
            user_ts=draft.turn_id,
            episode_id=episode_id,
        )
        rows = []
        for d in drafts:
            row = d.row()
            embed = {"vec_summary": d.summary_text_to_embed}
            if d.action_text_to_embed:
                embed["vec_action"] = d.action_text_to_embed
            row["_embed"] = embed
            rows.append(row)
        return rows

    async def record_subagent_outcome(self, outcome: SubagentOutcome) -> TurnEndAck:
        self._alive()
        check_text("task", outcome.task, self._max_input())
        check_text("result", outcome.result, self._max_input(), required=False)
        text = f"Subagent task: {outcome.task}\n\nSubagent result: {outcome.result}"
        call = ToolCall(
            name="subagent",
            input={"task": outcome.task, "child_session_id": outcome.child_session_id},
            output=outcome.result,
            error_code=outcome.error,
        )
        return await self.turn_end(
            TurnResult(
                agent=outcome.agent,
                session_id=outcome.session_id,
                agent_text=text,
                ts=outcome.ts or now_ms(),
                episode_id=outcome.episode_id,
                namespace=outcome.namespace,
                tool_calls=(*outcome.tool_calls, call),
                user_text=None if outcome.episode_id else f"Subagent task: {outcome.task}",
            )
        )

    async def record_tool_outcome(self, outcome: ToolOutcome) -> None:
        """Never throws; a no-op after shutdown and in lightweight mode (decision repair is full mode)."""
        try:
            if self._shut or self.lightweight:
                return
            key = outcome.episode_id or outcome.session_id
            self._tool_steps[key] = self._tool_steps.get(key, 0) + 1
            if self.learner is not None and isinstance(outcome.tool, str) and outcome.tool:
                self.learner.tool_outcome(outcome.session_id, outcome.tool, bool(outcome.success))
        except Exception:  # pragma: no cover - by contract
            return

    # ------------------------------------------------------------------ feedback
    async def submit_feedback(self, feedback: FeedbackInput) -> Feedback:
        self._alive()
        if feedback.channel not in ("explicit", "implicit"):
            raise bad("channel must be explicit or implicit", field="channel")
        if feedback.polarity not in ("positive", "negative", "neutral"):
            raise bad("polarity must be positive, negative or neutral", field="polarity")
        mag = feedback.magnitude
        if (
            isinstance(mag, bool)
            or not isinstance(mag, int | float)
            or not 0.0 <= float(mag) <= 1.0
        ):
            raise bad("magnitude must be a number in [0, 1]", field="magnitude")
        if feedback.rationale is not None:
            check_text("rationale", feedback.rationale, self._max_input(), required=False)
        ns = self._ns(feedback.namespace)
        trace: Trace | None = None
        if feedback.trace_id is not None:
            check_id("trace_id", feedback.trace_id)
            trace = await self.get_trace(feedback.trace_id, ns)
            if trace is None:
                raise StratamemError(
                    ErrorCode.TRACE_NOT_FOUND,
                    f"trace {feedback.trace_id!r} not found",
                    {"trace_id": feedback.trace_id},
                )
        if feedback.episode_id is not None:
            check_id("episode_id", feedback.episode_id)
            if await self.get_episode(feedback.episode_id, ns) is None:
                raise StratamemError(
                    ErrorCode.EPISODE_NOT_FOUND,
                    f"episode {feedback.episode_id!r} not found",
                    {"episode_id": feedback.episode_id},
                )
        fb = Feedback(
            id=new_id("fb"),
            ts=feedback.ts or now_ms(),
            channel=feedback.channel,
            polarity=feedback.polarity,
            magnitude=float(mag),
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

        rows = await self._db(lambda: self.db.call(store_fb))
        if trace is not None:
            num = sum((m if p == "positive" else -m) for p, m in rows if p != "neutral" and m > 0)
            den = sum(m for p, m in rows if p != "neutral" and m > 0)
            if den > 0:
                value = max(-1.0, min(1.0, num / den))
                await self._drain_journal(15.0)
                async with self.journal.write_lock:
                    await self.store.update(
                        "traces",
                        trace.id,
                        {
                            "value": value,
                            "r_human": value,
                            "priority": max(trace.priority, abs(value)),
                        },
                    )
        self.bus.emit(
            "feedback.received",
            {"feedback_id": fb.id, "trace_id": fb.trace_id, "polarity": fb.polarity},
        )
        if self.learner is not None:  # full mode: experience, then score the episode now
            try:
                await self.learner.feedback_stored(
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

    # ------------------------------------------------------------------ traces
    async def _trace_rows(
        self, ids: Sequence[str], ns: Namespace, all_ns: bool = False
    ) -> dict[str, dict[str, Any]]:
        """Applied rows from LanceDB plus still-pending journal rows, visible to ``ns`` only.

        Pending rows are snapshotted *before* LanceDB is read: a row applied while the read runs is
        then in one of the two (never in neither)."""
        wanted = set(ids)
        pend = [
            r
            for r in self.journal.pending_rows("trace")
            if r["id"] in wanted and (all_ns or visible(r, ns))
        ]
        where = visibility_where(ns, all_namespaces=all_ns)
        found = {r["id"]: r for r in await self.store.get_rows("traces", list(ids), where)}
        for r in pend:
            found.setdefault(r["id"], r)
        return found

    async def get_trace(self, trace_id: str, namespace: Namespace | None = None) -> Trace | None:
        self._alive()
        check_id("trace_id", trace_id)
        rows = await self._trace_rows([trace_id], self._ns(namespace))
        return trace_from_row(rows[trace_id]) if trace_id in rows else None

    async def timeline(self, episode_id: str, namespace: Namespace | None = None) -> list[Trace]:
        """The episode's traces in order (≤500), from storage only: no embedding, no ranking."""
        self._alive()
        check_id("episode_id", episode_id)
        ns = self._ns(namespace)
        ep = await self.get_episode(episode_id, ns)
        if ep is None:
            raise StratamemError(
                ErrorCode.EPISODE_NOT_FOUND,
                f"episode {episode_id!r} not found",
                {"episode_id": episode_id},
            )
        ids = list(ep.trace_ids)[:500]
        rows = await self._trace_rows(ids, ns)
        return [trace_from_row(rows[i], ep.status) for i in ids if i in rows]

    async def list_traces(self, query: ListQuery) -> list[Trace]:
        self._alive()
        check_limit(query.limit, query.offset)
        ns = self._ns(query.namespace)
        where = [visibility_where(ns, all_namespaces=query.include_all_namespaces)]
        if query.session_id:
            where.append(f"session_id = {_q(query.session_id)}")
        if query.q:
            check_text("q", query.q, 1000)
            like = _q("%" + query.q.lower().replace("%", "") + "%")
            where.append(f"(lower(summary) LIKE {like} OR lower(user_text) LIKE {like})")
        flt = " AND ".join(where)
        pend = [
            r
            for r in self.journal.pending_rows("trace")
            if (query.include_all_namespaces or visible(r, ns))
            and (not query.session_id or r["session_id"] == query.session_id)
            and (
                not query.q
                or query.q.lower()
                in ((r.get("summary") or "") + (r.get("user_text") or "")).lower()
            )
        ]
        # pending first, storage second (see _trace_rows): no row falls between the two reads
        keys = await self.store.scan("traces", flt, 10**6, columns=["id", "ts"])
        seen = {k["id"] for k in keys}
        allk = [(int(k["ts"]), k["id"]) for k in keys] + [
            (int(r["ts"]), r["id"]) for r in pend if r["id"] not in seen
        ]
        allk.sort(reverse=True)
        page = [i for _, i in allk[query.offset : query.offset + query.limit]]
        rows = await self._trace_rows(page, ns, query.include_all_namespaces)
        return [trace_from_row(rows[i]) for i in page if i in rows]

    async def update_trace(
        self, trace_id: str, patch: TracePatch, namespace: Namespace | None = None
    ) -> Trace | None:
        self._alive()
        check_id("trace_id", trace_id)
        values: dict[str, Any] = {}
        for name in ("summary", "user_text", "agent_text"):
            v = getattr(patch, name)
            if v is not None:
                values[name] = check_text(name, v, self._max_input(), required=False)
        if patch.tags is not None:
            values["tags"] = [check_text("tag", t, 64) for t in patch.tags]
        ns = self._ns(namespace)
        if await self.get_trace(trace_id, ns) is None:
            return None
        if not values:
            return await self.get_trace(trace_id, ns)
        await self._drain_journal(15.0)
        async with self.journal.write_lock:
            cur = (await self.store.get_rows("traces", [trace_id]))[0]
            merged = {**cur, **values}
            merged["search_text"] = (
                "\n".join(str(merged.get(k) or "") for k in ("user_text", "agent_text", "summary"))
                + "\n"
                + " ".join(merged.get("tags") or [])
            )
            await self.store.upsert("traces", [merged])
        self.bus.emit("trace.updated", {"trace_id": trace_id})
        return await self.get_trace(trace_id, ns)

    async def delete_traces(
        self, trace_ids: Sequence[str], namespace: Namespace | None = None
    ) -> int:
        """Hard delete, idempotent, owner namespace only (shared rows are not the reader's to delete)."""
        self._alive()
        ids = [check_id("trace_id", t) for t in trace_ids]
        if not ids:
            return 0
        ns = self._ns(namespace)
        owner = (
            f"(owner_agent_kind = {_q(ns.agent_kind)} AND owner_profile_id = {_q(ns.profile_id or 'default')}"
            " OR owner_agent_kind = 'unknown')"
        )
        async with self.journal.write_lock:
            stored = {r["id"] for r in await self.store.get_rows("traces", ids, owner)}
            pend = {
                r["id"]
                for r in self.journal.pending_rows("trace")
                if r["id"] in set(ids)
                and visible(r, ns)
                and (r.get("owner_agent_kind") in (ns.agent_kind, "unknown"))
            }
            gone = stored | pend
            if not gone:
                return 0
            seqs = self.journal.forget(pend)
            await self._db(lambda: self.db.journal_mark_applied(seqs, error="deleted"))
            await self.store.delete("traces", sorted(stored))

        def unlink(c: sqlite3.Connection) -> None:
            for row in c.execute("SELECT id, trace_ids_json FROM episodes").fetchall():
                tids = json.loads(row[1] or "[]")
                kept = [t for t in tids if t not in gone]
                if len(kept) != len(tids):
                    c.execute(
                        "UPDATE episodes SET trace_ids_json=? WHERE id=?",
                        (json.dumps(kept), row[0]),
                    )

        await self._db(lambda: self.db.call(unlink))
        self.bus.emit("trace.deleted", {"trace_ids": sorted(gone)})
        return len(gone)

    # ------------------------------------------------------------------ policies / world models / skills
    async def _get_one(self, table: str, row_id: str, ns: Namespace) -> dict[str, Any] | None:
        rows = await self.store.get_rows(table, [row_id], visibility_where(ns))
        return rows[0] if rows else None

    async def _list(self, table: str, query: ListQuery, order: str) -> list[dict[str, Any]]:
        check_limit(query.limit, query.offset)
        ns = self._ns(query.namespace)
        where = [visibility_where(ns, all_namespaces=query.include_all_namespaces)]
        if query.status:
            where.append(f"status = {_q(query.status)}")
        if query.q:
            where.append(f"lower(search_text) LIKE {_q('%' + query.q.lower() + '%')}")
        rows = await self.store.scan(table, " AND ".join(where), 10**6)
        rows.sort(key=lambda r: r.get(order) or 0, reverse=True)
        return rows[query.offset : query.offset + query.limit]

    def _owner_where(self, ns: Namespace) -> str:
        return f"(owner_agent_kind = {_q(ns.agent_kind)} AND owner_profile_id = {_q(ns.profile_id or 'default')})"

    async def get_policy(self, policy_id: str, namespace: Namespace | None = None) -> Policy | None:
        self._alive()
        check_id("policy_id", policy_id)
        row = await self._get_one("policies", policy_id, self._ns(namespace))
        return policy_from_row(row) if row else None

    async def list_policies(self, query: ListQuery) -> list[Policy]:
        self._alive()
        return [policy_from_row(r) for r in await self._list("policies", query, "updated_at")]

    async def set_policy_status(
        self, policy_id: str, status: str, namespace: Namespace | None = None
    ) -> Policy | None:
        self._alive()
        check_id("policy_id", policy_id)
        if status not in ("candidate", "active", "archived"):
            raise bad("status must be candidate, active or archived", field="status")
        ns = self._ns(namespace)
        row = await self._get_one("policies", policy_id, ns)
        if row is None:
            return None
        await self.store.update("policies", policy_id, {"status": status, "updated_at": now_ms()})
        return await self.get_policy(policy_id, ns)

    async def delete_policy(self, policy_id: str, namespace: Namespace | None = None) -> bool:
        return await self._delete_owned("policies", policy_id, namespace)

    async def _delete_owned(self, table: str, row_id: str, namespace: Namespace | None) -> bool:
        self._alive()
        check_id("id", row_id)
        ns = self._ns(namespace)
        rows = await self.store.get_rows(table, [row_id], self._owner_where(ns))
        if not rows:
            return False
        await self.store.delete(table, [row_id])
        return True

    async def get_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> WorldModel | None:
        self._alive()
        check_id("world_model_id", world_model_id)
        row = await self._get_one("world_models", world_model_id, self._ns(namespace))
        return world_model_from_row(row) if row else None

    async def list_world_models(self, query: ListQuery) -> list[WorldModel]:
        self._alive()
        return [
            world_model_from_row(r) for r in await self._list("world_models", query, "updated_at")
        ]

    async def delete_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> bool:
        return await self._delete_owned("world_models", world_model_id, namespace)

    async def get_skill(
        self,
        skill_id: str,
        options: SkillGetOptions | None = None,
        namespace: Namespace | None = None,
    ) -> Skill | None:
        self._alive()
        check_id("skill_id", skill_id)
        ns = self._ns(namespace)
        row = await self._get_one("skills", skill_id, ns)
        if row is None:
            by_name = await self.store.scan(
                "skills", f"name = {_q(skill_id)} AND {visibility_where(ns)}", 2
            )
            row = by_name[0] if len(by_name) == 1 else None
        if row is None:
            return None
        if options is not None and options.record_use:
            await self.store.update(
                "skills",
                row["id"],
                {"usage_count": int(row.get("usage_count") or 0) + 1, "last_used_at": now_ms()},
            )
            row = await self._get_one("skills", row["id"], ns) or row
        if options is not None and options.record_trial and self.learner is not None:
            await self.learner.skill_trial(
                row["id"], options.session_id, options.episode_id, options.trace_id
            )
        return skill_from_row(row)

    async def list_skills(self, query: ListQuery) -> list[Skill]:
        self._alive()
        return [skill_from_row(r) for r in await self._list("skills", query, "updated_at")]

    async def archive_skill(
        self, skill_id: str, reason: str = "manual", namespace: Namespace | None = None
    ) -> Skill:
        self._alive()
        check_id("skill_id", skill_id)
        ns = self._ns(namespace)
        rows = await self.store.get_rows("skills", [skill_id], self._owner_where(ns))
        if not rows:
            raise StratamemError(
                ErrorCode.SKILL_NOT_FOUND, f"skill {skill_id!r} not found", {"skill_id": skill_id}
            )
        if reason not in ("eta-floor", "manual", "policy-rebuilt"):
            reason = "manual"
        await self.store.update("skills", skill_id, {"status": "archived", "updated_at": now_ms()})
        await self._db(
            lambda: self.db.audit("core", "skill.archived", skill_id, {"reason": reason}, ns)
        )
        skill = await self.get_skill(skill_id, namespace=ns)
        assert skill is not None
        return skill

    async def delete_skill(self, skill_id: str, namespace: Namespace | None = None) -> bool:
        return await self._delete_owned("skills", skill_id, namespace)

    # ------------------------------------------------------------------ events
    def subscribe_events(
        self, since_seq: int | None = None, types: Sequence[str] = ()
    ) -> AsyncIterator[Event]:
        self._alive()
        return self.bus.subscribe(since_seq, types)


def _q(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_ = ids_where  # re-exported helper for readers of this module


@contextlib.asynccontextmanager
async def open_core(
    home: str | os.PathLike[str] | None = None,
    *,
    embedder: Any = None,
    host: str | None = None,
    **config_overrides: Any,
) -> AsyncIterator[Any]:
    """Open (and own) a home: lock, config, SQLite, LanceDB, journal replay; shut down on exit.

    The owner also serves the home on its Unix socket; when another process owns the home, this
    yields a ``RemoteCore`` connected to that owner instead (``stratamem.core.server.connect``).
    ``embedder`` lets a caller share one already-loaded embedder between cores (tests, servers).
    Config overrides use dotted or double-underscore keys (``retrieval__tier2_top_k=7``).
    """
    from stratamem.core.server.connect import open_or_connect

    async with open_or_connect(home, embedder=embedder, host=host, **config_overrides) as core:
        yield core


async def open_local_core(
    home: str | os.PathLike[str] | None = None,
    *,
    embedder: Any = None,
    host: str | None = None,
    **config_overrides: Any,
) -> LocalCore:
    """Like ``open_core`` without the context manager (the caller must ``shutdown()``)."""
    path = resolve_home(home, host=host)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, prepare_home, path)
    cfg = await loop.run_in_executor(None, lambda: load_config(path, config_overrides))
    await loop.run_in_executor(None, ensure_config_file, path)
    lock = HomeLock(path).acquire()
    db: Database | None = None
    store: LanceStore | None = None
    try:
        db = await loop.run_in_executor(
            None,
            lambda: Database(
                path / "data" / "stratamem.db", int(cfg["storage"]["sqlite_busy_timeout_ms"])
            ),
        )
        emb = embedder
        if emb is None:
            emb = await loop.run_in_executor(None, lambda: _load_embedder(cfg["embedding"]))
        dim = int(getattr(emb, "dimension", 0) or 0) or 384
        model = str(getattr(emb, "model", "") or "none")
        store = await LanceStore(path / "data" / "lance", dim, model, cfg["storage"]).open()
        from stratamem.core.config.loader import (
            CONFIG_FILE,
            deep_merge,
            overrides_to_tree,
            read_user_config,
        )
        from stratamem.core.learning.mode import resolve_mode

        user = deep_merge(read_user_config(path / CONFIG_FILE), overrides_to_tree(config_overrides))
        lightweight, mode_reason = resolve_mode(user, cfg)
        cfg["algorithm"]["lightweight_memory"]["enabled"] = lightweight
        llm = _load_llm(cfg)
        core = LocalCore(
            path,
            cfg,
            db=db,
            store=store,
            lock=lock,
            embedder=emb,
            llm=llm,
            owns_embedder=embedder is None,
        )
        core.mode_reason = mode_reason
        await core.start()
        return core
    except BaseException:
        if store is not None:
            store.close()
        if db is not None:
            db.close()
        lock.release()
        raise
