"""Retrieval's learned tables — skills (tier 1), world models (tier 3), feedback-derived
experiences and the policies linked to the kept episodes (tier 2, full mode) — served from the hot
index or LanceDB through the caller's scope. Split from ``engine.py``: the trace tier stays there."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stratamem.contract.dtos import Namespace
from stratamem.core.retrieval import hot_channels as hc
from stratamem.core.retrieval import hot_tiers, lance_tiers
from stratamem.core.retrieval.candidates import Pool, num, search_text
from stratamem.core.retrieval.filters import simple_where
from stratamem.core.retrieval.rank import Ranked
from stratamem.core.storage.ownership import quote as q

if TYPE_CHECKING:
    from stratamem.core.retrieval.engine import _Run


async def learned_pool(
    run: _Run, pool: Pool, name: str, where: Sequence[str], pred: Any, floor: float, k: int
) -> bool:
    """A learned layer's channels, from the hot index or LanceDB; False when it holds nothing
    (the tier is skipped without a query)."""
    vec_limit = max(k, math.ceil(k * float(run.s("candidate_pool_factor"))))
    kw_limit = max(k, int(run.s("keyword_top_k")))
    if run.hot is not None:
        t = run.hot_table(name)
        if t is None:
            return False
        mask = hc.owner_mask(t, run.ctx.namespace, pred)
        hot_tiers.table_pool(
            pool,
            t,
            run.cq,
            run.qvec,
            mask,
            vec_floor=floor,
            vec_limit=vec_limit,
            kw_limit=kw_limit,
        )
        return True
    table = run.table(name)
    if table is None:
        return False
    await lance_tiers.table_pool(
        pool,
        table,
        simple_where(run.ctx.namespace, where),
        run.cq,
        run.qvec,
        run.dl,
        store=run.ctx.store,
        name=name,
        vec_floor=floor,
        vec_limit=vec_limit,
        kw_limit=kw_limit,
        text_of=search_text,
    )
    return True


async def skills(run: _Run) -> None:
    t0 = time.perf_counter()
    pool = Pool("skill", ("vec",), search_text)
    min_eta = float(run.s("min_skill_eta"))
    where = ["status IN ('active', 'candidate')", f"eta >= {min_eta}"]
    ok = _skill_ok(min_eta)
    if not await learned_pool(run, pool, "skills", where, ok, run.min_sim, run.plan.caps[1]):
        return
    blend = float(run.s("skill_eta_blend"))
    for c in pool.items.values():
        c.boost = blend * num(c.row, "eta")
    run.pools.append(pool)
    run.latency[1] += (time.perf_counter() - t0) * 1000


async def world_models(run: _Run) -> None:
    t0 = time.perf_counter()
    pool = Pool("world_model", ("vec",), search_text)
    where = ["coalesce(status, 'active') <> 'archived'"]
    floor = min(run.min_sim, 0.15)
    k = run.plan.caps[3]
    if not await learned_pool(run, pool, "world_models", where, _world_model_ok, floor, k):
        return
    run.pools.append(pool)
    run.latency[3] += (time.perf_counter() - t0) * 1000


async def experiences(run: _Run) -> None:
    pool = Pool("experience", ("vec",), search_text)
    where = ["status IN ('active', 'candidate')", "array_length(source_feedback_ids) > 0"]
    k = run.plan.caps[2]
    if not await learned_pool(run, pool, "policies", where, _experience_ok, run.min_sim, k):
        return
    for c in pool.items.values():
        c.boost = 0.2 * max(
            num(c.row, "salience"), num(c.row, "confidence", 0.5), num(c.row, "gain")
        )
    run.pools.append(pool)


async def linked_policies(run: _Run, ranked: Sequence[Ranked]) -> list[dict[str, Any]]:
    """Active policies induced from the episodes of the kept traces/episodes (full mode)."""
    table = run.table("policies")
    if not run.plan.guidance or (table is None and run.hot is None):
        return []
    eps = sorted(
        {
            str(it.cand.row.get("episode_id") or it.cand.ref_id)
            for it in ranked
            if it.cand.ref_kind in ("trace", "episode")
        }
    )
    if not eps:
        return []
    if run.hot is not None or table is None:
        return _hot_linked(run.hot_table("policies"), run.ctx.namespace, set(eps))
    where = simple_where(
        run.ctx.namespace,
        [
            "status = 'active'",
            "array_has_any(source_episode_ids, make_array(" + ", ".join(q(e) for e in eps) + "))",
        ],
    )
    return await lance_tiers.linked_policies(table, where, run.dl)


# -- the learned tables' row predicates on the hot path (the ``where`` strings above, per row) --
def _skill_ok(min_eta: float) -> Any:
    def ok(r: Mapping[str, Any]) -> bool:
        eta = r.get("eta")
        return r.get("status") in ("active", "candidate") and eta is not None and eta >= min_eta

    return ok


def _world_model_ok(r: Mapping[str, Any]) -> bool:
    return (r.get("status") or "active") != "archived"


def _experience_ok(r: Mapping[str, Any]) -> bool:
    return (
        r.get("status") in ("active", "candidate") and len(r.get("source_feedback_ids") or ()) > 0
    )


def _hot_linked(t: Any, ns: Namespace | None, eps: set[str]) -> list[dict[str, Any]]:
    if t is None:
        return []

    def ok(r: Mapping[str, Any]) -> bool:
        return r.get("status") == "active" and not eps.isdisjoint(r.get("source_episode_ids") or ())

    return [dict(t.rows[s] or {}) for s in np.flatnonzero(hc.owner_mask(t, ns, ok))[:20]]
