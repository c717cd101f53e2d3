"""L2 policies (memos-core §5.4): associate valuable traces, pool the rest by signature, induce
policies through the LLM, and keep each policy's gain, support and status up to date.

No LLM ⇒ no new policies; association to existing ones still works.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from stratamem.core.ids import new_id, now_ms
from stratamem.core.learning import prompts
from stratamem.core.learning.context import LearningContext, centroid, vec_of
from stratamem.core.learning.gain import raw_gain, update_gain
from stratamem.core.learning.signature import tool_names, trace_signature
from stratamem.core.learning.similarity import dice, same_text
from stratamem.core.storage.ownership import Scope

DAY_MS = 86_400_000
LIVE = "status IN ('active', 'candidate')"


@dataclass
class L2Result:
    associated: dict[str, list[str]] = field(default_factory=dict)  # policy -> trace ids
    induced: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    activated: list[str] = field(default_factory=list)
    skipped_reason: str | None = None


async def policy_signatures(ctx: LearningContext, policy_ids: list[str]) -> dict[str, set[str]]:
    if not policy_ids:
        return {}
    marks = ",".join("?" for _ in policy_ids)
    rows = await ctx.query(
        f"SELECT DISTINCT promoted_policy_id, signature FROM l2_candidate_pool"
        f" WHERE promoted_policy_id IN ({marks})",
        policy_ids,
    )
    out: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        out[r[0]].add(r[1])
    return out


def signature_score(cos: float, trace_sig: str, policy_sigs: set[str], bonus: float) -> float:
    """cos + bonus per shared {primary, secondary, tool}; soft gate when both error codes differ."""
    a = trace_sig.split("|")
    best = max(0.0, cos)
    if not policy_sigs:
        return min(best, 1.0)
    scores = []
    for sig in policy_sigs:
        b = sig.split("|")
        shared = sum(1 for i in range(3) if a[i] != "_" and a[i] == b[i])
        plus = bonus * shared
        if (
            a[0] != "_"
            and b[0] != "_"
            and a[3] != "_"
            and b[3] != "_"
            and a[0] != b[0]
            and a[3] != b[3]
        ):
            scores.append(min(0.5 * best + plus, 0.4))
        else:
            scores.append(min(best + plus, 1.0))
    return max(scores)


async def _neighbours(
    ctx: LearningContext, vec: list[float], owner: Scope, limit: int
) -> list[tuple[dict[str, Any], float]]:
    try:
        return await ctx.nearest("policies", "vec", vec, owner, LIVE, limit)
    except Exception:
        return []


async def _link(ctx: LearningContext, links: list[tuple[str, str, str, float]]) -> None:
    ts = now_ms()

    def run(c: sqlite3.Connection) -> None:
        c.executemany(
            "INSERT INTO trace_policy_links(trace_id, policy_id, episode_id, score, created_at)"
            " VALUES (?,?,?,?,?) ON CONFLICT(trace_id, policy_id) DO UPDATE SET score=excluded.score",
            [(t, p, e, s, ts) for t, p, e, s in links],
        )

    if links:
        await ctx.sql(run)


async def run_l2(ctx: LearningContext, episode_id: str, traces: list[dict[str, Any]]) -> L2Result:
    res = L2Result()
    min_v = float(ctx.cfg("l2_induction", "min_trace_value"))
    min_sim = float(ctx.cfg("l2_induction", "min_similarity"))
    bonus = float(ctx.cfg("l2_induction", "signature_bonus"))
    eligible = [t for t in traces if float(t.get("value") or 0) >= min_v and vec_of(t) is not None]
    if not eligible:
        res.skipped_reason = "no_eligible_traces"
        return res
    owner = Scope.of_row(eligible[0])  # one owner per run: nothing of another profile joins in
    eligible = [t for t in eligible if owner.accepts(t)]
    now = now_ms()
    links: list[tuple[str, str, str, float]] = []
    unmatched: list[dict[str, Any]] = []
    top_k = int(ctx.cfg("l2_induction", "association_top_k"))
    for t in eligible:
        vec = vec_of(t)
        assert vec is not None
        near = await _neighbours(ctx, vec, owner, top_k)
        sigs = await policy_signatures(ctx, [str(p["id"]) for p, _ in near])
        sig = trace_signature(t)
        scored = [
            (p, signature_score(c, sig, sigs.get(str(p["id"]), set()), bonus)) for p, c in near
        ]
        best = max(scored, key=lambda x: x[1], default=None)
        if best is not None and best[1] >= min_sim:
            pid = str(best[0]["id"])
            links.append((str(t["id"]), pid, episode_id, best[1]))
            res.associated.setdefault(pid, []).append(str(t["id"]))
            ctx.emit(
                "policy.trace_associated",
                {"policy_id": pid, "trace_id": t["id"], "score": best[1]},
                owner=t,
            )
        else:
            unmatched.append(t)
    await _link(ctx, links)
    ttl = int(ctx.cfg("l2_induction", "candidate_ttl_days")) * DAY_MS

    def pool_add(c: sqlite3.Connection) -> None:
        c.executemany(
            "INSERT INTO l2_candidate_pool(signature, trace_id, episode_id, value, created_at, expires_at)"
            " VALUES (?,?,?,?,?,?) ON CONFLICT(signature, trace_id) DO UPDATE SET"
            " expires_at=excluded.expires_at, value=excluded.value",
            [
                (
                    trace_signature(t),
                    t["id"],
                    t["episode_id"],
                    float(t.get("value") or 0),
                    now,
                    now + ttl,
                )
                for t in unmatched
            ],
        )

    if unmatched:
        await ctx.sql(pool_add)
    await _induce_ready_buckets(ctx, res, owner)
    touched = sorted({*res.associated, *res.induced})
    for pid in touched:
        await update_policy_gain(
            ctx, pid, episode_id, new_support=len(res.associated.get(pid, [])), res=res, owner=owner
        )
    await sweep_candidates(ctx, owner, set(touched), res)
    return res


async def _induce_ready_buckets(ctx: LearningContext, res: L2Result, owner: Scope) -> None:
    """Buckets of the owner's own pooled traces (the pool row's episode says whose it is): another
    profile's traces neither make a bucket ready nor reach the prompt."""
    now = now_ms()
    rows = await ctx.query(
        "SELECT p.signature, p.trace_id, p.episode_id, p.value FROM l2_candidate_pool p"
        " JOIN episodes e ON e.id = p.episode_id"
        f" WHERE p.promoted_policy_id IS NULL AND p.expires_at > ? AND {owner.where}",
        (now,),
    )
    buckets: dict[str, list[sqlite3.Row]] = defaultdict(list)
    for r in rows:
        buckets[r["signature"]].append(r)
    need = int(ctx.cfg("l2_induction", "min_episodes_for_induction"))
    ready = [(s, b) for s, b in buckets.items() if len({r["episode_id"] for r in b}) >= need]
    ready.sort(key=lambda sb: -len(sb[1]))
    min_sim = float(ctx.cfg("l2_induction", "min_similarity"))
    for sig, bucket in ready:
        evidence = [
            t
            for t in await ctx.rows("traces", [r["trace_id"] for r in bucket], owner)
            if vec_of(t) is not None
        ]
        if not evidence:
            continue
        # (a) an existing policy already covers this bucket: promote into it, no LLM
        target: str | None = None
        for t in evidence:
            vec = vec_of(t)
            assert vec is not None
            near = await _neighbours(
                ctx, vec, owner, int(ctx.cfg("l2_induction", "duplicate_top_k"))
            )
            hit = next((p for p, c in near if c >= min_sim), None)
            if hit is not None:
                target = str(hit["id"])
                break
        if target is None:
            if not ctx.has_llm or not bool(ctx.cfg("l2_induction", "use_llm")):
                res.skipped_reason = "llm_disabled"
                continue
            target = await _induce(ctx, sig, evidence, owner, res)
            if target is None:
                continue
        await _promote(ctx, sig, [r["trace_id"] for r in bucket], target, evidence)
        res.associated.setdefault(target, []).extend(str(t["id"]) for t in evidence)


async def _promote(
    ctx: LearningContext,
    sig: str,
    trace_ids: list[str],
    policy_id: str,
    evidence: list[dict[str, Any]],
) -> None:
    def run(c: sqlite3.Connection) -> None:
        c.executemany(
            "UPDATE l2_candidate_pool SET promoted_policy_id=? WHERE signature=? AND trace_id=?",
            [(policy_id, sig, t) for t in trace_ids],
        )

    await ctx.sql(run)
    await _link(ctx, [(str(t["id"]), policy_id, str(t["episode_id"]), 1.0) for t in evidence])


def _payload_trace(t: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": t["id"],
        "episode": t["episode_id"],
        "tags": list(t.get("tags") or []),
        "user": str(t.get("user_text") or "")[:200],
        "agent": str(t.get("agent_text") or "")[:300],
        "tools": tool_names(t)[:3],
        "reflection": str(t.get("reflection") or "")[:300],
        "V": round(float(t.get("value") or 0), 3),
        "alpha": round(float(t.get("alpha") or 0), 3),
    }


async def _induce(
    ctx: LearningContext, sig: str, evidence: list[dict[str, Any]], owner: Scope, res: L2Result
) -> str | None:
    best: dict[str, dict[str, Any]] = {}
    for t in evidence:
        e = str(t["episode_id"])
        if e not in best or float(t.get("value") or 0) > float(best[e].get("value") or 0):
            best[e] = t
    picked = sorted(best.values(), key=lambda t: -float(t.get("value") or 0))
    cap = int(ctx.cfg("l2_induction", "trace_char_cap"))
    payload: list[dict[str, Any]] = []
    for t in picked:
        item = _payload_trace(t)
        if payload and len(json.dumps([*payload, item])) > cap:
            break
        payload.append(item)
    draft = await ctx.ask("l2.induce", {"signature": sig, "traces": payload}, prompts.valid_policy)
    if draft is None:
        res.skipped_reason = "llm_failed"
        return None
    procedure = str(draft.get("procedure") or draft.get("action") or "").strip()
    title, trigger = str(draft["title"]).strip()[:120], str(draft["trigger"]).strip()
    episodes = sorted({str(t["episode_id"]) for t in evidence})
    existing = await ctx.scan("policies", owner, "status <> 'archived'", 500)
    for p in existing:
        if _content_duplicate(ctx, p, title, trigger, procedure, draft):
            merged = sorted({*(p.get("source_episode_ids") or []), *episodes})
            await ctx.update(
                "policies", str(p["id"]), {"source_episode_ids": merged, "updated_at": now_ms()}
            )
            return str(p["id"])
    vec = centroid([v for t in evidence if (v := vec_of(t)) is not None])
    ts = now_ms()
    first = evidence[0]
    row = {
        "id": new_id("po"),
        "title": title,
        "trigger": trigger,
        "procedure": procedure,
        "verification": str(draft.get("verification") or ""),
        "boundary": str(draft.get("boundary") or ""),
        "support": 0,
        "gain": 0.0,
        "status": "candidate",
        "experience_type": "success_pattern",
        "evidence_polarity": "positive",
        "salience": 0.0,
        "confidence": _conf(draft.get("confidence")),
        "skill_eligible": True,
        "guidance_json": json.dumps({"preference": [], "anti_pattern": []}),
        "source_episode_ids": episodes,
        "source_feedback_ids": [],
        "source_trace_ids": [str(t["id"]) for t in evidence][:50],
        "created_at": ts,
        "updated_at": ts,
        "edited_at": None,
        "search_text": "\n".join([title, trigger, procedure, str(draft.get("boundary") or "")]),
        "owner_agent_kind": first["owner_agent_kind"],
        "owner_profile_id": first["owner_profile_id"],
        "owner_workspace_id": first.get("owner_workspace_id"),
        "share_scope": "private",
        "share_target": None,
        "shared_at": None,
        "vec": vec,
    }
    await ctx.upsert("policies", [row])
    res.induced.append(str(row["id"]))
    ctx.emit(
        "policy.induced",
        {"policy_id": row["id"], "title": title, "signature": sig, "episode_ids": episodes},
        owner=row,
    )
    return str(row["id"])


def _conf(x: Any) -> float:
    try:
        return max(0.0, min(1.0, float(x)))
    except (TypeError, ValueError):
        return 0.5


def _content_duplicate(
    ctx: LearningContext,
    p: dict[str, Any],
    title: str,
    trigger: str,
    procedure: str,
    draft: dict[str, Any],
) -> bool:
    pt, ptr, pp = (
        str(p.get("title") or ""),
        str(p.get("trigger") or ""),
        str(p.get("procedure") or ""),
    )
    if same_text(pt, title) and same_text(ptr, trigger) and same_text(pp, procedure):
        return True
    compatible = (
        dice(str(p.get("boundary") or ""), str(draft.get("boundary") or "")) >= 0.45
        or dice(str(p.get("verification") or ""), str(draft.get("verification") or "")) >= 0.45
    )
    polarity_conflict = ("不适用" in pt + ptr) != ("不适用" in title + trigger)
    return (
        (
            dice(pt, title) >= float(ctx.cfg("l2_induction", "dice_title"))
            or dice(ptr, trigger) >= float(ctx.cfg("l2_induction", "dice_trigger"))
            or dice(pp, procedure) >= float(ctx.cfg("l2_induction", "dice_procedure"))
        )
        and compatible
        and not polarity_conflict
    )


async def update_policy_gain(
    ctx: LearningContext,
    policy_id: str,
    episode_id: str,
    new_support: int,
    res: L2Result,
    owner: Scope,
) -> None:
    rows = await ctx.rows("policies", [policy_id], owner)
    if not rows:
        return
    p = rows[0]
    links = await ctx.query(
        "SELECT trace_id, episode_id FROM trace_policy_links WHERE policy_id=?", (policy_id,)
    )
    with_ids = {str(r[0]) for r in links}
    episodes = {episode_id, *(str(r[1]) for r in links)}
    per_ep = int(ctx.cfg("l2_induction", "gain_scope_per_episode"))
    scope: list[dict[str, Any]] = []
    for e in sorted(episodes):
        scope += (await ctx.episode_traces(e))[-per_ep:]
    cap = int(ctx.cfg("l2_induction", "gain_set_cap"))
    scope.sort(key=lambda t: -int(t.get("ts") or 0))
    with_v = [float(t.get("value") or 0) for t in scope if t["id"] in with_ids][:cap]
    without_v = [float(t.get("value") or 0) for t in scope if t["id"] not in with_ids][:cap]
    raw = raw_gain(
        with_v,
        without_v,
        float(ctx.cfg("reward", "tau_softmax")),
        int(ctx.cfg("l2_induction", "gain_pseudo_count")),
    )
    upd = update_gain(
        float(p.get("gain") or 0),
        int(p.get("support") or 0),
        str(p.get("status") or "candidate"),
        raw,
        new_support,
        ema_alpha=float(ctx.cfg("l2_induction", "gain_ema_alpha")),
        min_support=int(ctx.cfg("skill", "min_support")),
        min_gain=float(ctx.cfg("skill", "min_gain")),
        archive_gain=float(ctx.cfg("l2_induction", "archive_gain")),
    )
    srcs = sorted({*(p.get("source_episode_ids") or []), *(str(r[1]) for r in links)})
    await ctx.update(
        "policies",
        policy_id,
        {
            "gain": upd.gain,
            "support": upd.support,
            "status": upd.status,
            "updated_at": now_ms(),
            "source_episode_ids": srcs,
        },
    )
    res.updated.append(policy_id)
    if upd.status == "active" and p.get("status") != "active":
        res.activated.append(policy_id)
    ctx.emit(
        "policy.revised",
        {"policy_id": policy_id, "gain": upd.gain, "support": upd.support, "status": upd.status},
        owner=p,
    )


async def sweep_candidates(
    ctx: LearningContext, owner: Scope, skip: set[str], res: L2Result
) -> None:
    min_support = int(ctx.cfg("skill", "min_support"))
    min_gain = float(ctx.cfg("skill", "min_gain"))
    for p in await ctx.scan("policies", owner, "status = 'candidate'", 500):
        if p["id"] in skip:
            continue
        if int(p.get("support") or 0) >= min_support and float(p.get("gain") or 0) >= min_gain:
            await ctx.update("policies", str(p["id"]), {"status": "active", "updated_at": now_ms()})
            res.activated.append(str(p["id"]))
            ctx.emit(
                "policy.revised",
                {
                    "policy_id": p["id"],
                    "gain": p.get("gain"),
                    "support": p.get("support"),
                    "status": "active",
                },
                owner=p,
            )
