"""Skills (memos-core §5.6): crystallise active, gainful policies into callable skills through the
LLM, verify them deterministically, and keep η and status up to date from trials.

No LLM ⇒ no skills. Trials are recorded by ``get_skill(record_trial=True)`` and resolved at the
episode's next reward.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from stratamem.core.ids import new_id, now_ms
from stratamem.core.learning import prompts
from stratamem.core.learning.context import LearningContext, cosine, vec_of
from stratamem.core.learning.eta import EtaState, apply_trial, initial_eta, trial_outcome
from stratamem.core.learning.signature import action_text, tool_names
from stratamem.core.storage.ownership import Scope, quote

_STOP = frozenset(
    [
        "this",
        "that",
        "with",
        "from",
        "have",
        "what",
        "when",
        "then",
        "them",
        "they",
        "your",
        "into",
        "were",
        "will",
        "would",
        "there",
        "their",
        "about",
        "after",
        "before",
        "which",
        "while",
        "should",
        "could",
        "using",
        "used",
    ]
)
_WORD = re.compile(r"[a-z0-9_]{4,}")
_CJK = re.compile(r"[\u4e00-\u9fff]")
NON_ANCHOR = frozenset({"failure_avoidance", "repair_instruction", "preference"})


@dataclass
class SkillResult:
    crystallized: list[str] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def tokens(text: str) -> set[str]:
    t = (text or "").lower()
    out = {w for w in _WORD.findall(t) if w not in _STOP}
    cjk = "".join(_CJK.findall(t))
    out |= {cjk[i : i + 2] for i in range(len(cjk) - 1)}
    return out


def verify(
    draft: dict[str, Any], evidence: list[dict[str, Any]], min_cov: float, min_res: float
) -> str | None:
    """``None`` when the draft passes; else why it does not (tool coverage, resonance)."""
    seen = {n.lower() for t in evidence for n in tool_names(t)}
    tools = [str(x).lower() for x in draft.get("tools") or []]
    if tools and len([x for x in tools if x in seen]) / len(tools) < min_cov:
        return "tool_coverage"
    draft_tokens = tokens(
        str(draft.get("summary") or "") + " " + " ".join(map(str, draft.get("steps") or []))
    )
    if not evidence:
        return "no_evidence"
    hits = sum(
        1
        for t in evidence
        if len(draft_tokens & tokens(f"{t.get('user_text') or ''} {t.get('agent_text') or ''}"))
        >= 2
    )
    if hits / len(evidence) < min_res:
        return "resonance"
    return None


def snake(name: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return (s or "skill")[:32]


def invocation_guide(draft: dict[str, Any], policy: dict[str, Any]) -> str:
    def bullets(items: Any) -> list[str]:
        return [f"- {x}" for x in items or [] if str(x).strip()]

    g = draft.get("decision_guidance") or {}
    lines = [
        f"# {draft.get('display_title') or draft['name']}",
        "",
        str(draft.get("summary") or ""),
        "",
    ]
    lines += ["## When to use", str(policy.get("trigger") or ""), ""]
    for title, key in (("Preconditions", "preconditions"), ("Parameters", "parameters")):
        if draft.get(key):
            lines += [f"## {title}", *bullets(draft.get(key)), ""]
    lines += [
        "## Procedure",
        *(f"{i + 1}. {s}" for i, s in enumerate(draft.get("steps") or [])),
        "",
    ]
    if draft.get("examples"):
        lines += ["## Examples", *bullets(draft.get("examples")), ""]
    if draft.get("tools"):
        lines += ["## Tools used", *bullets(draft.get("tools")), ""]
    if g.get("preference") or g.get("anti_pattern"):
        lines += [
            "## Decision guidance",
            *(f"- Prefer: {x}" for x in g.get("preference") or []),
            *(f"- Avoid: {x}" for x in g.get("anti_pattern") or []),
            "",
        ]
    return "\n".join(lines).strip() + "\n"


def _anchor(p: dict[str, Any]) -> bool:
    return (
        p.get("skill_eligible") is not False
        and str(p.get("experience_type") or "success_pattern") not in NON_ANCHOR
        and str(p.get("evidence_polarity") or "positive") in ("positive", "mixed")
    )


async def run_skills(ctx: LearningContext, owner: Scope, hint: str | None = None) -> SkillResult:
    res = SkillResult()
    min_support = int(ctx.cfg("skill", "min_support"))
    min_gain = float(ctx.cfg("skill", "min_gain"))
    where = "status = 'active'"
    if hint:
        where += f" AND id = {quote(hint)}"
    skills = await ctx.scan("skills", owner, "status <> 'archived'", 1000)
    for p in await ctx.scan("policies", owner, where, 200):
        if (
            float(p.get("gain") or 0) < min_gain
            or int(p.get("support") or 0) < min_support
            or not _anchor(p)
        ):
            continue
        citing = [s for s in skills if p["id"] in (s.get("source_policy_ids") or [])]
        current = max(citing, key=lambda s: int(s.get("updated_at") or 0), default=None)
        if current is not None and int(current.get("updated_at") or 0) >= int(
            p.get("updated_at") or 0
        ):
            continue
        if not ctx.has_llm_for("skill.crystallize") or not bool(ctx.cfg("skill", "use_llm")):
            res.failed[str(p["id"])] = "llm_disabled"
            continue
        await _crystallize(ctx, p, current, skills, res)
    return res


async def _evidence(
    ctx: LearningContext, p: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    per = int(ctx.cfg("skill", "evidence_per_episode"))
    w = float(ctx.cfg("skill", "evidence_cos_weight"))
    pool: list[dict[str, Any]] = []
    owner = Scope.of_row(p)
    for e in p.get("source_episode_ids") or []:
        pool += (await ctx.episode_traces(str(e)))[:per]
    pool = [
        t
        for t in pool
        if owner.accepts(t) and "[REDACTED]" not in f"{t.get('user_text')}{t.get('agent_text')}"
    ]
    pvec = vec_of(p, "vec")
    scored = sorted(
        pool,
        key=lambda t: -(float(t.get("value") or 0) + w * cosine(vec_of(t, "vec_summary"), pvec)),
    )
    good = [t for t in scored if float(t.get("value") or 0) > 0][
        : int(ctx.cfg("skill", "evidence_limit"))
    ]
    bad = sorted(
        (t for t in pool if float(t.get("value") or 0) < 0),
        key=lambda t: float(t.get("value") or 0),
    )
    return good, bad[: int(ctx.cfg("skill", "counter_examples"))]


async def _counter_examples(
    ctx: LearningContext, p: dict[str, Any], bad: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Failures near the policy: its own episodes' V<0 traces, else similar V<0 traces."""
    if bad:
        return bad
    pvec = vec_of(p, "vec")
    if pvec is None:
        return []
    try:
        near = await ctx.nearest(
            "traces",
            "vec_summary",
            pvec,
            Scope.of_row(p),
            "value < 0",
            int(ctx.cfg("skill", "counter_examples")),
        )
    except Exception:
        return []
    return [r for r, c in near if c >= float(ctx.cfg("retrieval", "min_trace_sim"))]


def _brief(t: dict[str, Any], cap: int) -> dict[str, Any]:
    return {
        "id": t["id"],
        "user": str(t.get("user_text") or "")[:cap],
        "agent": str(t.get("agent_text") or "")[:cap],
        "action": action_text(t, cap),
        "tools": tool_names(t),
        "V": round(float(t.get("value") or 0), 3),
    }


async def _crystallize(
    ctx: LearningContext,
    p: dict[str, Any],
    current: dict[str, Any] | None,
    skills: list[dict[str, Any]],
    res: SkillResult,
) -> None:
    pid = str(p["id"])
    good, bad = await _evidence(ctx, p)
    if not good:
        res.failed[pid] = "no-evidence"
        ctx.emit("skill.failed", {"policy_id": pid, "reason": "no-evidence"}, owner=p)
        return
    bad = await _counter_examples(ctx, p, bad)
    cap = int(ctx.cfg("skill", "trace_char_cap"))
    guidance = json.loads(p.get("guidance_json") or "{}")
    payload = {
        "policy": {
            k: p.get(k) for k in ("id", "title", "trigger", "procedure", "verification", "boundary")
        },
        "evidence": [_brief(t, cap) for t in good],
        "counter_examples": [_brief(t, cap) for t in bad],
        "repair_hints": guidance,
        "existing_names": sorted(str(s.get("name")) for s in skills),
    }
    draft = await ctx.ask("skill.crystallize", payload, prompts.valid_skill)
    if draft is None:
        res.failed[pid] = "llm_failed"
        ctx.emit("skill.failed", {"policy_id": pid, "reason": "llm_failed"}, owner=p)
        return
    why = verify(
        draft,
        good,
        float(ctx.cfg("skill", "verify_min_tool_coverage")),
        float(ctx.cfg("skill", "verify_min_resonance")),
    )
    if why is not None:
        res.failed[pid] = why
        ctx.emit("skill.failed", {"policy_id": pid, "reason": why}, owner=p)
        return
    name = snake(str(draft["name"]))
    taken = {str(s.get("name")) for s in skills if current is None or s["id"] != current["id"]}
    base, n = name, 2
    while name in taken:
        name = f"{base[:29]}_{n}"
        n += 1
    draft["name"] = name
    g_raw = draft.get("decision_guidance")
    g: dict[str, Any] = g_raw if isinstance(g_raw, dict) else {}
    guid = {
        "preference": [str(x) for x in (g.get("preference") or [])][:5]
        + list(guidance.get("preference") or []),
        "anti_pattern": [str(x) for x in (g.get("anti_pattern") or [])][:5]
        + list(guidance.get("anti_pattern") or []),
    }
    draft["decision_guidance"] = guid
    guide = invocation_guide(draft, p)
    gain, support = float(p.get("gain") or 0), int(p.get("support") or 0)
    attempts = int(current.get("trials_attempted") or 0) if current else 0
    if current is not None and attempts:
        eta = float(current.get("eta") or 0.1)
    elif current is not None:
        eta = max(0.1, min(1.0, max(0.0, gain)))
    else:
        eta = initial_eta(gain, support, int(ctx.cfg("skill", "min_support")))
    summary = str(draft.get("summary") or "")
    vec = await ctx.embed(
        "\n".join([summary, *map(str, draft.get("steps") or []), str(p.get("trigger") or "")])
    )
    ts = now_ms()
    row = {
        "id": current["id"] if current else new_id("sk"),
        "name": name,
        "status": "candidate",
        "invocation_guide": guide,
        "guidance_json": json.dumps(guid),
        "evidence_anchors": [str(t["id"]) for t in good],
        "eta": eta,
        "support": support,
        "gain": gain,
        "trials_attempted": attempts,
        "trials_passed": int(current.get("trials_passed") or 0) if current else 0,
        "source_policy_ids": [str(p["id"])],
        "source_world_model_ids": list(current.get("source_world_model_ids") or [])
        if current
        else [],
        "version": int(current.get("version") or 1) + 1 if current else 1,
        "usage_count": int(current.get("usage_count") or 0) if current else 0,
        "last_used_at": current.get("last_used_at") if current else None,
        "created_at": int(current.get("created_at") or ts) if current else ts,
        "updated_at": ts,
        "edited_at": None,
        "search_text": "\n".join([name, str(draft.get("display_title") or ""), summary, guide]),
        "owner_agent_kind": p["owner_agent_kind"],
        "owner_profile_id": p["owner_profile_id"],
        "owner_workspace_id": p.get("owner_workspace_id"),
        "share_scope": "private",
        "share_target": None,
        "shared_at": None,
        "vec": vec,
    }
    wms = await ctx.scan(
        "world_models", Scope.of_row(p), "coalesce(status, 'active') <> 'archived'", 500
    )
    row["source_world_model_ids"] = sorted(
        {
            *row["source_world_model_ids"],
            *(str(w["id"]) for w in wms if p["id"] in (w.get("policy_ids") or [])),
        }
    )
    await ctx.upsert("skills", [row])
    (res.rebuilt if current else res.crystallized).append(str(row["id"]))
    ctx.emit(
        "skill.crystallized",
        {
            "skill_id": row["id"],
            "name": name,
            "policy_id": pid,
            "eta": eta,
            "version": row["version"],
        },
        owner=row,
    )


async def lifecycle_tick(ctx: LearningContext) -> list[str]:
    """Candidate skills with no decision guidance and η ≥ archive floor become active at once."""
    floor = float(ctx.cfg("skill", "archive_eta"))
    promoted = []
    for s in await ctx.scan(
        "skills", Scope.everything("skills.lifecycle"), "status = 'candidate'", 1000
    ):
        g = json.loads(s.get("guidance_json") or "{}")
        if not (g.get("preference") or g.get("anti_pattern")) and float(s.get("eta") or 0) >= floor:
            await ctx.update("skills", str(s["id"]), {"status": "active", "updated_at": now_ms()})
            promoted.append(str(s["id"]))
            ctx.emit(
                "skill.eta_updated",
                {
                    "skill_id": s["id"],
                    "eta": s.get("eta"),
                    "status": "active",
                    "cause": "lifecycle",
                },
                owner=s,
            )
    return promoted


async def record_trial(
    ctx: LearningContext,
    skill_id: str,
    session_id: str | None,
    episode_id: str | None,
    trace_id: str | None,
) -> str:
    tid = new_id("st")
    ts = now_ms()

    def run(c: sqlite3.Connection) -> None:
        c.execute(
            "INSERT INTO skill_trials(id, skill_id, session_id, episode_id, trace_id, status, created_at)"
            " VALUES (?,?,?,?,?,'pending',?)",
            (tid, skill_id, session_id, episode_id, trace_id, ts),
        )

    await ctx.sql(run)
    return tid


def _resolve_trial_row(params: tuple[str, int, float, str], c: sqlite3.Connection) -> None:
    c.execute("UPDATE skill_trials SET status=?, resolved_at=?, reward=? WHERE id=?", params)


async def resolve_trials(ctx: LearningContext, episode_id: str, reward: float) -> list[str]:
    """Pending trials of the episode: pass/fail move η (and status); unknown leaves η alone."""
    rows = await ctx.query(
        "SELECT id, skill_id FROM skill_trials WHERE episode_id=? AND status='pending'",
        (episode_id,),
    )
    outcome = trial_outcome(
        reward,
        float(ctx.cfg("skill", "trial_pass_reward")),
        float(ctx.cfg("skill", "trial_fail_reward")),
    )
    changed = []
    owner = await ctx.episode_owner(
        episode_id
    )  # a trial moves η of the episode owner's skills only
    for r in rows:
        if outcome != "unknown" and owner is not None:
            got = await ctx.rows("skills", [str(r["skill_id"])], owner)
            if got:
                s = got[0]
                st = apply_trial(
                    EtaState(
                        float(s.get("eta") or 0),
                        int(s.get("trials_attempted") or 0),
                        int(s.get("trials_passed") or 0),
                        str(s.get("status") or "candidate"),
                    ),
                    outcome == "pass",
                    candidate_trials=int(ctx.cfg("skill", "candidate_trials")),
                    archive_eta=float(ctx.cfg("skill", "archive_eta")),
                )
                await ctx.update(
                    "skills",
                    str(s["id"]),
                    {
                        "eta": st.eta,
                        "trials_attempted": st.attempts,
                        "trials_passed": st.passes,
                        "status": st.status,
                        "updated_at": now_ms(),
                    },
                )
                changed.append(str(s["id"]))
                ctx.emit(
                    "skill.eta_updated",
                    {"skill_id": s["id"], "eta": st.eta, "status": st.status, "cause": "trial"},
                    owner=s,
                )
                if st.status == "archived" and s.get("status") != "archived":
                    ctx.emit(
                        "skill.archived", {"skill_id": s["id"], "reason": "eta-floor"}, owner=s
                    )
        await ctx.sql(
            functools.partial(_resolve_trial_row, (outcome, now_ms(), reward, str(r["id"])))
        )
    return changed
