"""L3 world models (memos-core §5.5): cluster active, gainful policies by domain and abstract each
cluster into environment knowledge through the LLM; merge into a close model or create one.

No LLM ⇒ no world models.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from stratamem.core.ids import new_id, now_ms
from stratamem.core.learning import prompts
from stratamem.core.learning.context import LearningContext, centroid, cosine, vec_of
from stratamem.core.learning.signature import domain_key
from stratamem.core.storage.ownership import Scope

DAY_MS = 86_400_000


@dataclass
class Cluster:
    key: str
    members: list[dict[str, Any]]
    centroid: list[float] | None
    cohesion: float
    loose: bool

    @property
    def avg_gain(self) -> float:
        return sum(float(p.get("gain") or 0) for p in self.members) / max(1, len(self.members))

    @property
    def rank(self) -> tuple[float, int]:
        return (self.avg_gain * (0.5 + 0.5 * self.cohesion), len(self.members))


@dataclass
class L3Result:
    created: list[str] = field(default_factory=list)
    revised: list[str] = field(default_factory=list)
    skipped_reason: str | None = None


def _policy_text(p: dict[str, Any]) -> str:
    return " ".join(str(p.get(k) or "") for k in ("title", "trigger", "procedure", "boundary"))


def clusters(policies: list[dict[str, Any]], min_policies: int, min_sim: float) -> list[Cluster]:
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in policies:
        by_key[domain_key(_policy_text(p))].append(p)
    out: list[Cluster] = []
    for key, members in by_key.items():
        if len(members) < min_policies:
            continue
        vecs = [v for p in members if (v := vec_of(p, "vec")) is not None]
        cen = centroid(vecs)
        if cen is None:
            continue
        sims = [cosine(vec_of(p, "vec"), cen) for p in members if vec_of(p, "vec") is not None]
        strict = [
            p
            for p in members
            if vec_of(p, "vec") is None or cosine(vec_of(p, "vec"), cen) >= min_sim
        ]
        cohesion = sum(sims) / len(sims) if sims else 0.0
        loose = len(strict) < min_policies
        out.append(Cluster(key, members if loose else strict, cen, cohesion, loose))
    out.sort(key=lambda c: c.rank, reverse=True)
    return out


def _entries(items: Any, evidence: list[str]) -> list[dict[str, Any]]:
    out = []
    for e in items or []:
        if isinstance(e, dict) and str(e.get("label") or "").strip():
            out.append(
                {
                    "label": str(e["label"]).strip(),
                    "description": str(e.get("description") or ""),
                    "evidence_ids": list(
                        e.get("evidenceIds") or e.get("evidence_ids") or evidence[:4]
                    ),
                }
            )
    return out


def _union(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = {str(e.get("label", "")).lower() for e in old}
    return old + [e for e in new if str(e["label"]).lower() not in seen]


def _owner_tag(owner: Scope) -> str:
    """Cooldown keys per owner: one profile's run never delays another's."""
    ns = owner.namespace
    return "" if ns is None else f"{ns.agent_kind}/{ns.profile_id}."


async def run_l3(ctx: LearningContext, owner: Scope) -> L3Result:
    res = L3Result()
    if not ctx.has_llm_for("l3.abstract") or not bool(ctx.cfg("l3_abstraction", "use_llm")):
        res.skipped_reason = "llm_disabled"
        return res
    min_gain = float(ctx.cfg("l3_abstraction", "min_policy_gain"))
    min_support = int(ctx.cfg("l3_abstraction", "min_policy_support"))
    pols = [
        p
        for p in await ctx.scan("policies", owner, "status = 'active'", 500)
        if float(p.get("gain") or 0) >= min_gain and int(p.get("support") or 0) >= min_support
    ]
    cooldown_ms = float(ctx.cfg("l3_abstraction", "cooldown_days")) * DAY_MS
    for cl in clusters(
        pols,
        int(ctx.cfg("l3_abstraction", "min_policies")),
        float(ctx.cfg("l3_abstraction", "cluster_min_similarity")),
    ):
        kv_key = f"l3.lastRun.{_owner_tag(owner)}{cl.key.split('|')[0]}"
        if cooldown_ms > 0:
            last = await ctx.kv_get(kv_key)
            if last and now_ms() - int(last) < cooldown_ms:
                continue
        await _abstract(ctx, cl, owner, res)
        await ctx.kv_set(kv_key, now_ms())
    return res


async def _evidence(ctx: LearningContext, p: dict[str, Any]) -> list[dict[str, Any]]:
    per = int(ctx.cfg("l3_abstraction", "trace_evidence_per_policy"))
    cap = int(ctx.cfg("l3_abstraction", "trace_char_cap"))
    pool: list[dict[str, Any]] = []
    owner = Scope.of_row(p)
    for e in list(p.get("source_episode_ids") or [])[: min(3, per + 1)]:
        pool += (await ctx.episode_traces(str(e)))[:8]
    pool = [t for t in pool if vec_of(t) is not None and owner.accepts(t)]
    pool.sort(key=lambda t: -float(t.get("value") or 0))
    return [
        {
            "id": t["id"],
            "user": str(t.get("user_text") or "")[: cap // 2],
            "agent": str(t.get("agent_text") or "")[: cap // 2],
            "V": float(t.get("value") or 0),
        }
        for t in pool[:per]
    ]


async def _abstract(ctx: LearningContext, cl: Cluster, owner: Scope, res: L3Result) -> None:
    cap = int(ctx.cfg("l3_abstraction", "policy_char_cap"))
    payload: dict[str, Any] = {
        "domain": cl.key,
        "policies": [
            {
                "id": p["id"],
                "title": p.get("title"),
                "text": _policy_text(p)[:cap],
                "gain": float(p.get("gain") or 0),
                "evidence": await _evidence(ctx, p),
            }
            for p in cl.members
        ],
    }
    existing = await ctx.scan(
        "world_models", owner, "coalesce(status, 'active') <> 'archived'", 500
    )
    payload["existing_world_models"] = [
        {"id": w["id"], "title": w.get("title")} for w in existing[:20]
    ]
    draft = await ctx.ask("l3.abstract", payload, prompts.valid_world_model)
    if draft is None:
        res.skipped_reason = "llm_failed"
        return
    pids = [str(p["id"]) for p in cl.members]
    ev = [e["id"] for item in payload["policies"] for e in item["evidence"]]
    structure = {k: _entries(draft.get(k), ev) for k in ("environment", "inference", "constraints")}
    tags = [str(t) for t in draft.get("domain_tags") or [] if str(t).strip()][:6] or [
        cl.key.split("|")[0]
    ]
    episodes = sorted({str(e) for p in cl.members for e in p.get("source_episode_ids") or []})
    target = _merge_target(ctx, draft, existing, cl, tags, pids)
    ts = now_ms()
    delta = float(ctx.cfg("l3_abstraction", "confidence_delta"))
    if target is not None:
        old = json.loads(target.get("structure_json") or "{}")
        merged = {k: _union(list(old.get(k) or []), structure[k]) for k in structure}
        conf = min(1.0, max(0.0, float(target.get("confidence") or 0.5) + delta))
        body = str(draft.get("body") or target.get("body") or "")
        domain_tags = sorted({*(target.get("domain_tags") or []), *tags})[:12]
        values: dict[str, Any] = {
            "structure_json": json.dumps(merged),
            "body": body,
            "domain_tags": domain_tags,
            "policy_ids": sorted({*(target.get("policy_ids") or []), *pids}),
            "version": int(target.get("version") or 1) + 1,
            "confidence": conf,
            "updated_at": ts,
        }
        values["search_text"] = "\n".join(
            [str(target.get("title") or ""), body, " ".join(domain_tags)]
        )
        await ctx.update("world_models", str(target["id"]), values)
        res.revised.append(str(target["id"]))
        ctx.emit(
            "world_model.revised",
            {"world_model_id": target["id"], "version": values["version"], "policy_ids": pids},
            owner=target,
        )
        return
    base = (
        float(draft.get("confidence") or 0.5)
        if isinstance(draft.get("confidence"), int | float)
        else 0.5
    )
    if cl.loose:
        base *= float(ctx.cfg("l3_abstraction", "loose_confidence_base")) + 0.4 * cl.cohesion
    first = cl.members[0]
    title = str(draft["title"]).strip()[:200]
    body = str(draft.get("body") or "")
    row = {
        "id": new_id("wm"),
        "title": title,
        "body": body,
        "structure_json": json.dumps(structure),
        "policy_ids": pids,
        "domain_tags": tags,
        "confidence": max(0.0, min(1.0, base)),
        "version": 1,
        "status": "active",
        "created_at": ts,
        "updated_at": ts,
        "edited_at": None,
        "search_text": "\n".join([title, body, " ".join(tags)]),
        "owner_agent_kind": first["owner_agent_kind"],
        "owner_profile_id": first["owner_profile_id"],
        "owner_workspace_id": first.get("owner_workspace_id"),
        "share_scope": "private",
        "share_target": None,
        "shared_at": None,
        "vec": cl.centroid,
    }
    await ctx.upsert("world_models", [row])
    res.created.append(str(row["id"]))
    ctx.emit(
        "world_model.abstracted",
        {"world_model_id": row["id"], "title": title, "policy_ids": pids, "episode_ids": episodes},
        owner=row,
    )


def _merge_target(
    ctx: LearningContext,
    draft: dict[str, Any],
    existing: list[dict[str, Any]],
    cl: Cluster,
    tags: list[str],
    pids: list[str],
) -> dict[str, Any] | None:
    by_id = {str(w["id"]): w for w in existing}
    for sid in draft.get("supersedes_world_ids") or []:
        if str(sid) in by_id:
            return by_id[str(sid)]
    overlap_min = float(ctx.cfg("l3_abstraction", "merge_policy_overlap"))
    best: tuple[float, dict[str, Any]] | None = None
    for w in existing:
        wp = set(w.get("policy_ids") or [])
        if not wp:
            continue
        ov = len(wp & set(pids)) / max(1, min(len(wp), len(pids)))
        if ov >= overlap_min and (best is None or ov > best[0]):
            best = (ov, w)
    if best is not None:
        return best[1]
    min_sim = float(ctx.cfg("l3_abstraction", "cluster_min_similarity"))
    shared = [w for w in existing if set(w.get("domain_tags") or []) & set(tags)]
    scored = [(cosine(cl.centroid, vec_of(w, "vec")), w) for w in shared or existing]
    top = max(scored, key=lambda x: x[0], default=None)
    if top is not None and top[0] >= min_sim:
        return top[1]
    return None
