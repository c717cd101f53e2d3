"""Decision repair (memos-core §5.8): 3 failures of a tool within 5 steps of a session produce a
prefer/avoid pair (LLM, else a template from the session's high- and low-value traces), attached to
the related policies and — unlike the reference — prepended to that session's next turn start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sqlite3
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from stratamem.core.ids import new_id, now_ms
from stratamem.core.learning import prompts
from stratamem.core.learning.context import LearningContext, vec_of
from stratamem.core.learning.feedback import FeedbackClass
from stratamem.core.learning.signature import action_text, tool_names
from stratamem.core.retrieval.render import escape_nested
from stratamem.core.storage.ownership import Scope, quote

_FAILURE = re.compile(r"error|failed|failure|exception|traceback|timeout|retry", re.I)
DEFAULT_PREFER = "Prefer the path that has worked in this context before."
DEFAULT_AVOID = "Avoid repeating the same failing approach."


def context_hash(tool: str, context: str) -> str:
    return hashlib.sha1(f"{tool}\n{context}".encode()).hexdigest()[:16]


@dataclass
class _Track:
    failures: list[int] = field(default_factory=list)
    last_success: int | None = None


@dataclass
class _Session:
    step: int = 0
    tracks: dict[str, _Track] = field(default_factory=dict)


class BurstTracker:
    """Per (tool, session): failures within the last ``window`` steps, reset by a success.

    Bounded: past ``max_sessions`` the least recently active session is forgotten (a session that
    is never closed idles out; its step window is long gone by then)."""

    def __init__(self, threshold: int = 3, window: int = 5, max_sessions: int = 4096) -> None:
        self.threshold = threshold
        self.window = window
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    def record(self, session_id: str, tool: str, success: bool) -> bool:
        """Record one outcome; ``True`` when it completes a burst."""
        sess = self._sessions.pop(session_id, None) or _Session()
        self._sessions[session_id] = sess  # the most recently active last
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        sess.step += 1
        step = sess.step
        tr = sess.tracks.setdefault(tool, _Track())
        start = step - self.window + 1
        if success:
            tr.last_success = step
            tr.failures = [s for s in tr.failures if s > step]
            return False
        tr.failures = [s for s in tr.failures if s >= start]
        tr.failures.append(step)
        no_success = tr.last_success is None or tr.last_success < start
        return len(tr.failures) >= self.threshold and no_success

    def clear(self, session_id: str, tool: str) -> None:
        sess = self._sessions.get(session_id)
        if sess is not None:
            sess.tracks.pop(tool, None)

    def forget_session(self, session_id: str) -> None:
        """Free a closed or idle session's step counter and tracks."""
        self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._sessions) + sum(len(s.tracks) for s in self._sessions.values())


@dataclass(frozen=True, slots=True)
class Repair:
    id: str
    tool: str
    session_id: str
    preference: str
    anti_pattern: str
    severity: str
    confidence: float
    source: str
    policy_ids: tuple[str, ...]


def _first_line(text: str, cap: int = 200) -> str:
    for ln in (text or "").splitlines():
        if ln.strip():
            return ln.strip()[:cap]
    return ""


def _failure_like(t: dict[str, Any]) -> bool:
    if float(t.get("value") or 0) < 0:
        return True
    try:
        calls = json.loads(t.get("tool_calls_json") or "[]")
    except ValueError:
        calls = []
    if any(isinstance(c, dict) and c.get("error_code") for c in calls):
        return True
    return bool(_FAILURE.search(f"{t.get('agent_text') or ''}"))


def template(
    high: list[dict[str, Any]], low: list[dict[str, Any]], fc: FeedbackClass | None
) -> tuple[str, str, str, float]:
    prefer = (fc.prefer if fc else None) or (
        _first_line(str(high[0].get("reflection") or action_text(high[0]))) if high else ""
    )
    avoid = (fc.avoid if fc else None) or (
        _first_line(str(low[0].get("reflection") or action_text(low[0]))) if low else ""
    )
    severity = "warn" if low else "info"
    conf = fc.confidence if fc and fc.confidence else (0.6 if high and low else 0.4)
    return (
        f"Prefer: {prefer}" if prefer else DEFAULT_PREFER,
        f"Avoid: {avoid}" if avoid else DEFAULT_AVOID,
        severity,
        conf,
    )


async def run_repair(
    ctx: LearningContext, session_id: str, tool: str, fc: FeedbackClass | None = None
) -> Repair | None:
    chash = context_hash(tool, session_id)
    cooldown = int(ctx.cfg("feedback", "cooldown_ms"))
    recent = await ctx.query(
        "SELECT created_at FROM decision_repairs WHERE context_hash=? ORDER BY created_at DESC LIMIT 1",
        (chash,),
    )
    if recent and now_ms() - int(recent[0][0]) < cooldown:
        return None
    owner = await ctx.session_owner(session_id)
    if owner is None:
        return None
    await ctx.applied()
    n = int(ctx.cfg("feedback", "repair_evidence_traces"))
    traces = await ctx.scan("traces", owner, f"session_id = {quote(session_id)}", 5000)
    traces.sort(key=lambda t: int(t.get("ts") or 0))
    traces = traces[-n:]
    key = tool.lower()

    def mentions(t: dict[str, Any]) -> bool:
        hay = " ".join(
            [str(t.get(k) or "") for k in ("user_text", "agent_text", "reflection")] + tool_names(t)
        ).lower()
        return key in hay

    limit = int(ctx.cfg("feedback", "evidence_limit"))
    lo_thr = float(ctx.cfg("feedback", "min_low_value_threshold"))
    for pool in ([t for t in traces if mentions(t)], traces):
        high = sorted(
            (t for t in pool if float(t.get("value") or 0) > 0),
            key=lambda t: -float(t.get("value") or 0),
        )[:limit]
        low = sorted(
            (t for t in pool if float(t.get("value") or 0) < -lo_thr or _failure_like(t)),
            key=lambda t: float(t.get("value") or 0),
        )[:limit]
        if high or low:
            break
    episodes = sorted(
        {str(t["episode_id"]) for t in [*high, *low]} | {str(t["episode_id"]) for t in traces}
    )
    policies = []
    if episodes:
        arr = ", ".join(quote(e) for e in episodes)
        policies = await ctx.scan(
            "policies",
            owner,
            f"status <> 'archived' AND array_has_any(source_episode_ids, make_array({arr}))",
            50,
        )
    seen_ids = {str(p["id"]) for p in policies}
    policies += [
        p
        for p in await _near_policies(ctx, owner, low or traces[-1:])
        if str(p["id"]) not in seen_ids
    ]
    prefer, avoid, severity, conf = template(high, low, fc)
    source = "template"
    if ctx.has_llm and bool(ctx.cfg("feedback", "use_llm")):
        cap = int(ctx.cfg("feedback", "trace_char_cap"))

        def brief(t: dict[str, Any]) -> dict[str, Any]:
            return {
                "agent": str(t.get("agent_text") or "")[:cap],
                "action": action_text(t, cap),
                "reflection": str(t.get("reflection") or "")[:cap],
                "V": float(t.get("value") or 0),
                "tools": tool_names(t),
            }

        ans = await ctx.ask(
            "decision.repair",
            {
                "tool": tool,
                "high_value": [brief(t) for t in high],
                "low_value": [brief(t) for t in low],
                "user_preference": fc.prefer if fc else None,
                "user_avoid": fc.avoid if fc else None,
            },
            prompts.valid_repair,
        )
        if ans is not None and str(ans["preference"]).strip() and str(ans["anti_pattern"]).strip():
            prefer, avoid = (
                str(ans["preference"]).strip()[:300],
                str(ans["anti_pattern"]).strip()[:300],
            )
            severity = "warn" if ans.get("severity") == "warn" else "info"
            with contextlib.suppress(TypeError, ValueError):
                conf = max(0.0, min(1.0, float(ans.get("confidence", conf))))
            source = "llm"
    rep = Repair(
        new_id("dr"),
        tool,
        session_id,
        prefer,
        avoid,
        severity,
        conf,
        source,
        tuple(str(p["id"]) for p in policies),
    )
    ts = now_ms()

    def persist(c: sqlite3.Connection) -> None:
        c.execute(
            "INSERT INTO decision_repairs(id, context_hash, session_id, tool, preference, anti_pattern,"
            " severity, confidence, source, policy_ids_json, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                rep.id,
                chash,
                session_id,
                tool,
                prefer,
                avoid,
                severity,
                conf,
                source,
                json.dumps(list(rep.policy_ids)),
                ts,
            ),
        )

    await ctx.sql(persist)
    if bool(ctx.cfg("feedback", "attach_to_policy")):
        for p in policies:
            g = json.loads(p.get("guidance_json") or "{}")
            pref = list(g.get("preference") or [])
            anti = list(g.get("anti_pattern") or [])
            if prefer not in pref:
                pref.append(prefer)
            if avoid not in anti:
                anti.append(avoid)
            await ctx.update(
                "policies",
                str(p["id"]),
                {
                    "guidance_json": json.dumps({**g, "preference": pref, "anti_pattern": anti}),
                    "updated_at": ts,
                },
            )
    ctx.emit(
        "repair.generated",
        {
            "repair_id": rep.id,
            "session_id": session_id,
            "tool": tool,
            "source": source,
            "policy_ids": list(rep.policy_ids),
        },
        owner=owner,
    )
    return rep


async def _near_policies(
    ctx: LearningContext, owner: Scope, traces: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Policies the failing steps were trying to follow: live policies near their vectors (used
    when no policy shares an episode with the evidence, e.g. a brand-new session)."""
    floor = float(ctx.cfg("retrieval", "episode_goal_min_sim"))
    found: dict[str, dict[str, Any]] = {}
    for t in traces:
        vec = vec_of(t)
        if vec is None:
            continue
        try:
            near = await ctx.nearest("policies", "vec", vec, owner, "status = 'active'", 3)
        except Exception:
            continue
        for p, cos in near:
            if cos >= floor:
                found.setdefault(str(p["id"]), p)
    return list(found.values())


def render_repair(rows: list[sqlite3.Row]) -> str:
    """The block prepended to the next turn's injected context."""
    lines = [
        "<decision-repair>",
        "Recent repeated tool failures in this session. Adjust the approach:",
    ]
    for r in rows:
        lines.append(f"- Tool `{r['tool']}` ({r['severity']}):")
        lines.append(f"  {r['preference']}")
        lines.append(f"  {r['anti_pattern']}")
    lines.append("</decision-repair>")
    return escape_nested("\n".join(lines))


async def take_pending(ctx: LearningContext, session_id: str) -> str:
    """The undelivered repairs of the session as one block (marked delivered), or ``""``."""
    ts = now_ms()

    def run(c: sqlite3.Connection) -> list[sqlite3.Row]:
        rows = list(
            c.execute(
                "SELECT * FROM decision_repairs WHERE session_id=? AND delivered_at IS NULL ORDER BY created_at",
                (session_id,),
            )
        )
        if rows:
            c.executemany(
                "UPDATE decision_repairs SET delivered_at=? WHERE id=?",
                [(ts, r["id"]) for r in rows],
            )
        return rows

    rows = await ctx.sql(run)
    return render_repair(rows) if rows else ""
