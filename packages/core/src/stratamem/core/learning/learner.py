"""The full-mode learning orchestrator: one serial background queue per core that runs the topic-end
reflect pass, the feedback window, reward, L2 → L3 → skills, decision repair and skill trials.

Hooks are called by ``LocalCore``; none of them raises into the caller. ``flush()`` fires pending
feedback windows and waits until the queue is idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from stratamem.core.ids import new_id, now_ms
from stratamem.core.learning import repair as repair_mod
from stratamem.core.learning import rescore
from stratamem.core.learning.context import LearningContext
from stratamem.core.learning.experiences import feedback_experience
from stratamem.core.learning.feedback import classify_feedback, implicit_feedback
from stratamem.core.learning.policies import run_l2
from stratamem.core.learning.reflect import reflect_episode
from stratamem.core.learning.reward import score_episode
from stratamem.core.learning.skills import lifecycle_tick, record_trial, resolve_trials, run_skills
from stratamem.core.learning.world_models import run_l3
from stratamem.core.storage.ownership import Scope
from stratamem.core.telemetry import get_logger, span

log = get_logger("learning")
Job = Callable[[], Awaitable[None]]


class Learner:
    def __init__(self, core: Any) -> None:
        self.ctx = LearningContext(core)
        self.tracker = repair_mod.BurstTracker(
            int(self.ctx.cfg("feedback", "failure_threshold")),
            int(self.ctx.cfg("feedback", "failure_window")),
        )
        self._queue: asyncio.Queue[tuple[str, Job]] = asyncio.Queue()
        self._windows: dict[str, asyncio.TimerHandle | None] = {}
        self._reflected: set[str] = set()
        self._worker: asyncio.Task[None] | None = None
        self._periodic: asyncio.Task[None] | None = None
        self.failures: list[tuple[str, str]] = []
        #: epoch-ms clock of the rescoring scan (tests inject one)
        self.clock: Callable[[], int] = now_ms
        self._last_scan: int | None = None
        self._rescoring: set[str] = set()

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._worker = asyncio.create_task(self._run(), name="stratamem-learning")
        self._enqueue("recover", self._recover)
        interval = float(self.ctx.cfg("learning", "rescore_interval_s"))
        if interval > 0 and bool(self.ctx.cfg("session", "auto_recovery")):
            self._periodic = asyncio.create_task(
                self._rescan_every(interval), name="stratamem-rescore"
            )

    async def _recover(self) -> None:
        """memos-core §5.10 (start-up part): closed full-mode episodes with traces that were never
        scored (a feedback window lost to a restart) are reflected/scored again."""
        rows = await self.ctx.query(
            "SELECT id, meta_json FROM episodes WHERE status='closed' AND r_task IS NULL"
            " AND trace_ids_json <> '[]' ORDER BY ended_at DESC LIMIT 500"
        )
        for r in rows:
            meta = json.loads(r["meta_json"] or "{}")
            if meta.get("lightweight_memory", True) or "reward" in meta:
                continue
            eid = str(r["id"])
            if meta.get("reflected_at"):
                self._windows[eid] = None  # scored on the next feedback or flush
            else:
                self._enqueue("reflect", functools.partial(self._reflect, eid))

    async def stop(self) -> None:
        for h in self._windows.values():
            if h is not None:
                h.cancel()
        self._windows.clear()
        if self._periodic is not None:
            self._periodic.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._periodic
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker

    async def _run(self) -> None:
        while True:
            name, job = await self._queue.get()
            try:
                with span("learning.job", job=name):
                    await job()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failed stage degrades; the queue keeps going
                self.failures.append((name, str(exc)))
                log.warning("learning.job_failed", job=name, error=str(exc))
                with contextlib.suppress(Exception):
                    self.ctx.emit(
                        "system.error", {"stage": f"learning.{name}", "error": str(exc)[:500]}
                    )
            finally:
                self._queue.task_done()

    def _enqueue(self, name: str, job: Job) -> None:
        self._queue.put_nowait((name, job))

    async def flush(self, timeout_s: float | None = None) -> None:
        """Fire every pending feedback window now and wait until the queue is idle."""

        async def drain() -> None:
            while True:
                for eid in list(self._windows):
                    self._fire(eid, "flush")
                await self._queue.join()
                if not self._windows:
                    return

        if timeout_s is None:
            await drain()
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drain(), timeout_s)

    # -- topic end -> reflect -> window -> reward -> L2/L3/skills -------------------------------
    def episode_finalized(self, episode_id: str) -> None:
        self._enqueue("reflect", lambda: self._reflect(episode_id))

    async def _reflect(self, episode_id: str) -> None:
        await self.ctx.applied()
        traces = await self.ctx.episode_traces(episode_id)
        if not traces:
            return
        await reflect_episode(self.ctx, traces)
        self._reflected.add(episode_id)
        await self.ctx.patch_episode_meta(episode_id, {"reflected_at": now_ms()})
        self._reflected.discard(episode_id)  # the episode's meta says it from here on
        window = float(self.ctx.cfg("reward", "feedback_window_sec"))
        explicit = await self.ctx.query(
            "SELECT 1 FROM feedback WHERE episode_id=? AND channel='explicit' LIMIT 1",
            (episode_id,),
        )
        if explicit:
            self._enqueue("reward", lambda: self._reward(episode_id, "explicit_feedback"))
            return
        handle = None  # window 0: no timer, scored on feedback or flush only
        if window > 0:
            loop = asyncio.get_running_loop()
            handle = loop.call_later(window, self._fire, episode_id, "implicit_fallback")
        self._windows[episode_id] = handle

    def _fire(self, episode_id: str, trigger: str) -> None:
        if episode_id not in self._windows:
            return
        h = self._windows.pop(episode_id)
        if h is not None:
            h.cancel()
        self._enqueue("reward", lambda: self._reward(episode_id, trigger))

    async def _reward(self, episode_id: str, trigger: str) -> None:
        out = await score_episode(self.ctx, episode_id, trigger)
        if out is None:
            return
        await resolve_trials(self.ctx, episode_id, out.reward)
        traces = await self.ctx.episode_traces(episode_id)
        if not traces:
            return
        owner = Scope.of_row(traces[0])
        l2 = await run_l2(self.ctx, episode_id, traces)
        if l2.induced or l2.activated or l2.updated:
            await run_l3(self.ctx, owner)
        await run_skills(self.ctx, owner)
        await lifecycle_tick(self.ctx)

    # -- periodic rescoring of dirty episodes (memos-core §5.10) ------------------------------
    async def _rescan_every(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.rescan()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the next scan tries again
                log.warning("learning.rescan_failed", error=str(exc))

    async def rescan(self, *, force: bool = False) -> list[str]:
        """Queue a rescore of every dirty closed episode whose back-off has passed. Scans closer
        than ``rescore_dedupe_s`` to the previous one are skipped unless ``force``. Returns the
        queued episode ids."""
        now = self.clock()
        dedupe_ms = float(self.ctx.cfg("learning", "rescore_dedupe_s")) * 1000
        if not force and self._last_scan is not None and now - self._last_scan < dedupe_ms:
            return []
        self._last_scan = now
        min_age_ms = float(self.ctx.cfg("learning", "rescore_min_age_s")) * 1000
        rows = await self.ctx.query(
            "SELECT id, status, r_task, trace_ids_json, meta_json, ended_at, last_turn_ts"
            " FROM episodes WHERE status='closed' AND ended_at <= ?"
            " ORDER BY ended_at DESC LIMIT ?",
            (int(now - min_age_ms), int(self.ctx.cfg("learning", "rescore_page_size"))),
        )
        queued: list[str] = []
        for r in rows:
            eid = str(r["id"])
            if eid in self._rescoring or self._windows.get(eid) is not None:
                continue  # already queued, or its feedback window is still running
            reason = rescore.dirty_reason(r)
            if reason is None or not rescore.due(rescore.meta_of(r), now):
                continue
            self._rescoring.add(eid)
            queued.append(eid)
            log.info("learning.rescore_queued", episode_id=eid, reason=reason)
            self._enqueue("rescore", functools.partial(self._rescore, eid, "rescore"))
        return queued

    def rescore_episode(self, episode_id: str) -> None:
        """Manual path: rescore now, whatever the back-off says."""
        self._enqueue(
            "rescore", functools.partial(self._rescore, episode_id, "manual", manual=True)
        )

    async def _rescore(self, episode_id: str, trigger: str, *, manual: bool = False) -> None:
        """Reflect if needed, score, then record the attempt (an automatic failure backs off)."""
        self._rescoring.discard(episode_id)
        rows = await self.ctx.query("SELECT meta_json FROM episodes WHERE id=?", (episode_id,))
        if not rows:
            return
        meta = rescore.meta_of(rows[0])
        marked = bool(meta.get("reward_dirty"))
        error: Exception | None = None
        try:
            if marked:
                await self.ctx.patch_episode_meta(episode_id, {"reward_dirty": False})
            if not meta.get("reflected_at") and episode_id not in self._reflected:
                await self.ctx.applied()
                traces = await self.ctx.episode_traces(episode_id)
                if traces:
                    await reflect_episode(self.ctx, traces)
                self._reflected.add(episode_id)
                await self.ctx.patch_episode_meta(episode_id, {"reflected_at": now_ms()})
                self._reflected.discard(episode_id)
            h = self._windows.pop(episode_id, None)
            if h is not None:
                h.cancel()
            await self._reward(episode_id, trigger)
        except Exception as exc:
            error = exc
        after = await self.ctx.query(
            "SELECT id, status, r_task, trace_ids_json, meta_json, ended_at, last_turn_ts"
            " FROM episodes WHERE id=?",
            (episode_id,),
        )
        still = rescore.dirty_reason(after[0]) if after else None
        ok = error is None and still is None
        if error is not None and marked:
            await self.ctx.patch_episode_meta(episode_id, {"reward_dirty": True})
        state = rescore.after_attempt(
            meta.get("rescore"),
            ok=ok,
            manual=manual,
            now=self.clock(),
            error=str(error) if error is not None else still,
            after=int(self.ctx.cfg("learning", "rescore_backoff_after")),
            base_ms=int(float(self.ctx.cfg("learning", "rescore_backoff_base_s")) * 1000),
            cap_ms=int(float(self.ctx.cfg("learning", "rescore_backoff_max_s")) * 1000),
        )
        if state != meta.get("rescore"):
            await self.ctx.patch_episode_meta(episode_id, {"rescore": state})
        if error is not None:
            raise error

    # -- feedback ----------------------------------------------------------------------------
    async def feedback_stored(self, fb: dict[str, Any]) -> None:
        """After ``submit_feedback`` stored a row: experience, then score now (window or re-score)."""
        fc = classify_feedback(str(fb.get("rationale") or ""))
        episode_id = fb.get("episode_id")
        self._enqueue("experience", lambda: self._experience(fb, fc))
        if fb.get("raw") and isinstance(fb["raw"], dict) and fb["raw"].get("skill_id"):
            self._enqueue(
                "skill_thumb",
                lambda: self._skill_thumb(
                    str(fb["raw"]["skill_id"]), fb["polarity"], Scope.of_row(fb)
                ),
            )
        if not episode_id:
            return
        if episode_id in self._windows:
            self._fire(str(episode_id), "explicit_feedback")
            return
        rows = await self.ctx.query(
            "SELECT status, meta_json FROM episodes WHERE id=?", (episode_id,)
        )
        if rows and rows[0]["status"] == "closed":
            meta = json.loads(rows[0]["meta_json"] or "{}")
            if episode_id in self._reflected or meta.get("reflected_at"):
                eid = str(episode_id)
                self._enqueue(
                    "reward", lambda: self._rescore(eid, "explicit_feedback", manual=True)
                )

    async def _experience(self, fb: dict[str, Any], fc: Any) -> None:
        r_task = None
        if fb.get("episode_id"):
            rows = await self.ctx.query(
                "SELECT r_task, meta_json FROM episodes WHERE id=?", (fb["episode_id"],)
            )
            if rows:
                r_task = rows[0]["r_task"]
                fb = {
                    **fb,
                    "trigger": json.loads(rows[0]["meta_json"] or "{}").get(
                        "initial_user_text", ""
                    ),
                }
        await feedback_experience(self.ctx, fb, fc, r_task)

    async def _skill_thumb(self, skill_id: str, polarity: str, owner: Scope) -> None:
        from stratamem.core.learning.eta import EtaState, apply_thumb

        got = await self.ctx.rows("skills", [skill_id], owner)
        if not got or polarity == "neutral":
            return
        s = got[0]
        st = apply_thumb(
            EtaState(
                float(s.get("eta") or 0),
                int(s.get("trials_attempted") or 0),
                int(s.get("trials_passed") or 0),
                str(s.get("status") or "candidate"),
            ),
            polarity == "positive",
            float(self.ctx.cfg("skill", "eta_delta")),
            float(self.ctx.cfg("skill", "archive_eta")),
        )
        await self.ctx.update(
            "skills", skill_id, {"eta": st.eta, "status": st.status, "updated_at": now_ms()}
        )
        self.ctx.emit(
            "skill.eta_updated",
            {"skill_id": skill_id, "eta": st.eta, "status": st.status, "cause": "thumb"},
            owner=owner,
        )
        if st.status == "archived" and s.get("status") != "archived":
            self.ctx.emit(
                "skill.archived", {"skill_id": skill_id, "reason": "eta-floor"}, owner=owner
            )

    async def user_turn(self, session_id: str, text: str, namespace: dict[str, Any]) -> str | None:
        """A new user turn read as implicit feedback on the session's previous turn (stored row id)."""
        fc = implicit_feedback(text, float(self.ctx.cfg("feedback", "implicit_min_confidence")))
        if fc is None:
            return None
        rows = await self.ctx.query(
            "SELECT id, trace_ids_json FROM episodes WHERE session_id=? AND trace_ids_json <> '[]'"
            " ORDER BY coalesce(last_turn_ts, started_at) DESC LIMIT 1",
            (session_id,),
        )
        if not rows:
            return None
        episode_id = str(rows[0]["id"])
        trace_ids = json.loads(rows[0]["trace_ids_json"] or "[]")
        fid = new_id("fb")
        fb = {
            "id": fid,
            "ts": now_ms(),
            "episode_id": episode_id,
            "trace_id": trace_ids[-1] if trace_ids else None,
            "channel": "implicit",
            "polarity": fc.polarity,
            "magnitude": float(self.ctx.cfg("feedback", "implicit_magnitude")),
            "rationale": text[:2000],
            "raw": {"shape": fc.shape, "confidence": fc.confidence},
            **namespace,
        }

        def store(c: sqlite3.Connection) -> None:
            c.execute(
                "INSERT INTO feedback(id, owner_agent_kind, owner_profile_id, owner_workspace_id, ts,"
                " episode_id, trace_id, channel, polarity, magnitude, rationale, raw_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    fid,
                    fb["owner_agent_kind"],
                    fb["owner_profile_id"],
                    fb.get("owner_workspace_id"),
                    fb["ts"],
                    episode_id,
                    fb["trace_id"],
                    "implicit",
                    fc.polarity,
                    fb["magnitude"],
                    fb["rationale"],
                    json.dumps(fb["raw"]),
                ),
            )

        await self.ctx.sql(store)
        self.ctx.emit(
            "feedback.received",
            {"feedback_id": fid, "trace_id": fb["trace_id"], "polarity": fc.polarity},
            owner=fb,
        )
        await self.feedback_stored(fb)
        return fid

    # -- per-session state -------------------------------------------------------------------
    def forget_session(self, session_id: str) -> None:
        """A session closed or idled out: free its repair tracker state."""
        self.tracker.forget_session(session_id)

    def state_sizes(self) -> dict[str, int]:
        """Sizes of the in-memory per-session/per-episode state (the soak bench reads them)."""
        return {
            "reflected": len(self._reflected),
            "windows": len(self._windows),
            "repair_tracker": len(self.tracker),
            "rescoring": len(self._rescoring),
        }

    # -- decision repair ----------------------------------------------------------------------
    def tool_outcome(self, session_id: str, tool: str, success: bool) -> bool:
        """Record a tool outcome; a burst schedules a repair job. Returns whether it burst."""
        if not self.tracker.record(session_id, tool, success):
            return False
        self.tracker.clear(session_id, tool)
        self._enqueue("repair", lambda: self._repair(session_id, tool))
        return True

    async def _repair(self, session_id: str, tool: str) -> None:
        rep = await repair_mod.run_repair(self.ctx, session_id, tool)
        if rep is None or not rep.policy_ids:
            return
        owner = await self.ctx.session_owner(session_id)
        if owner is None:
            return
        for p in await self.ctx.rows("policies", list(rep.policy_ids), owner):
            # guidance changed: rebuild the policy's skill with the repair hints
            await run_skills(self.ctx, owner, hint=str(p["id"]))

    async def repair_packet(self, session_id: str) -> str:
        return await repair_mod.take_pending(self.ctx, session_id)

    # -- skills ------------------------------------------------------------------------------
    async def skill_trial(
        self, skill_id: str, session_id: str | None, episode_id: str | None, trace_id: str | None
    ) -> str:
        if episode_id is None and session_id:
            rows = await self.ctx.query(
                "SELECT id FROM episodes WHERE session_id=? AND status='open' ORDER BY started_at DESC LIMIT 1",
                (session_id,),
            )
            episode_id = str(rows[0]["id"]) if rows else None
        return await record_trial(self.ctx, skill_id, session_id, episode_id, trace_id)
