"""Retrieval latency and scaling: turn-start recall end to end and without the embed, side by side
with exact numpy and LanceDB flat search on the same vectors, recall@10 against exact, and the ANN index."""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import metrics
from bench.corpus import AGENT, SyntheticCorpus, bench_query, bench_turn, load_store, query_texts
from bench.seed_design import SeedDesign
from bench.stats import Samples, time_async, time_sync

PRODUCTION_OVERRIDES: dict[str, Any] = {
    # measurement phases decide when indexes are built; the maintenance loop must not race them
    "storage__ann_threshold_rows": 10**10,
    "storage__optimize_interval_s": 10**8,
    "storage__optimize_after_rows": 10**9,
    # the figures are the in-memory path's at every size: no memory budget sends a namespace to
    # LanceDB (at 1M the index is larger than the default storage.hot_index_max_mb)
    "storage__hot_index_max_mb": 0,
}


class FixedQueryEmbedder:
    """Hands the retrieval engine an already computed query vector (retrieval without the embed)."""

    def __init__(self, vec: np.ndarray) -> None:
        self.vec = vec

    async def embed_query(self, text: str) -> np.ndarray:
        return self.vec


def served_context(core: Any, query: Any, qvec: np.ndarray, tables: dict[str, Any]) -> Any:
    """The engine's served path for ``query`` with its vector already computed (retrieval without
    the embed): the tables read through the caller's scope, the hot index, the production deadline."""
    from stratamem.core.retrieval.engine import RetrievalContext, scheduled_tiers

    return RetrievalContext(
        query=query,
        namespace=query.namespace,
        tables=tables,
        embedder=FixedQueryEmbedder(qvec),
        config=core.config,
        lightweight=core.lightweight,
        deadline=time.monotonic() + 30,
        tiers=scheduled_tiers(query),
        store=core.store,
        hot=core.store.hot,
        vocab=core.services.vocab,
    )


def scoped_tables(store: Any, ns: Any) -> dict[str, Any]:
    """The four tables retrieval reads, each through ``ns``'s visibility scope."""
    from stratamem.core.storage.ownership import Scope

    visible = Scope.visible(ns)
    return {n: store.scoped(n, visible) for n in ("traces", "policies", "world_models", "skills")}


def memory_mb() -> dict[str, float]:
    """Resident and peak resident memory of this process (``/proc/self/status``), MB."""
    out: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, val = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = round(int(val.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def _lance_flat(tbl: Any, qvec: np.ndarray, k: int) -> list[str]:
    rows = await (
        tbl.query()
        .nearest_to(qvec)
        .column("vec_summary")
        .distance_type("cosine")
        .bypass_vector_index()
        .select(["id"])
        .limit(k)
        .to_list()
    )
    return [r["id"] for r in rows]


async def _ann_variant(store: Any, qvec: np.ndarray, where: str, postfilter: bool) -> list[str]:
    q = (
        store.maintenance_table("traces", "bench.ann_variant")
        .query()
        .nearest_to(qvec)
        .column("vec_summary")
        .distance_type("cosine")
        .select(["id"])
        .limit(10)
    )
    if postfilter:
        q = q.where(f"vec_summary IS NOT NULL AND ({where})").postfilter()
    q = store.tune_vector_query(q, "traces", "vec_summary")
    return [r["id"] for r in await q.to_list()]


async def _measure(
    core: Any,
    embedder: Any,
    ids: np.ndarray,
    matrix: np.ndarray,
    queries: list[str],
    warmup: int,
    ann: bool,
    label: str,
    seed: SeedDesign | None = None,
) -> dict[str, Any]:
    from stratamem.contract.dtos import Namespace
    from stratamem.core.retrieval import channels as ch
    from stratamem.core.retrieval.engine import retrieve
    from stratamem.core.retrieval.filters import TraceFilter
    from stratamem.core.storage.ownership import Scope

    ns = Namespace(agent_kind=AGENT)
    store = core.store
    tbl = store.maintenance_table("traces", "bench.scaling_baseline")
    tables = scoped_tables(store, ns)
    flt = TraceFilter(namespace=ns)
    where = flt.where(vector=True)
    hot = store.hot.scoped("traces", Scope.visible(ns)) if store.hot is not None else None
    samples = Samples()
    recall: dict[str, list[float]] = {}
    hits_seen = 0
    # what the served path answered, to compare runs and trees (determinism-session12.md)
    answered = {"retrieval": hashlib.sha256(), "turn_start_ids": hashlib.sha256()}
    for i, text in enumerate(queries):
        keep = i >= warmup
        ms, qvec = time_sync(lambda t=text: embedder.embed_query(t))
        qvec = np.asarray(qvec, dtype=np.float32)
        if keep:
            samples.add("embed_query", ms)
        ms, top = time_sync(lambda q=qvec: metrics.exact_topk(matrix, q, 10))
        exact = [str(ids[j]) for j in top]
        if keep:
            samples.add("numpy_exact", ms)
        ms, flat = await time_async(lambda q=qvec: _lance_flat(tbl, q, 10))
        if keep:
            samples.add("lance_flat", ms)
            recall.setdefault("lance_flat", []).append(metrics.overlap_at_k(flat, exact, 10))
        ms, got = await time_async(lambda q=qvec: ch.table_vector(tbl, "vec_summary", q, where, 20))
        if keep:
            samples.add("vector_channel", ms)
            recall.setdefault("vector_channel", []).append(
                metrics.overlap_at_k([r["id"] for r, _s in got], exact, 10)
            )
        if seed is not None:
            ms, got_seed = time_sync(lambda q=qvec: seed.search(q, 10))
            if keep:
                samples.add("seed_bruteforce_sqlite", ms)
                recall.setdefault("seed_bruteforce_sqlite", []).append(
                    metrics.overlap_at_k(got_seed, exact, 10)
                )
        if hot is not None:
            from stratamem.core.retrieval.hot_channels import trace_mask

            def hot_vec(q: np.ndarray = qvec) -> list[tuple[int, float]]:
                return hot.vector("vec_summary", q, trace_mask(hot, flt, vector=True), 20)

            ms, got_hot = time_sync(hot_vec)
            if keep:
                samples.add("hot_vector", ms)
                recall.setdefault("hot_vector", []).append(
                    metrics.overlap_at_k([str(hot.ids[s]) for s, _ in got_hot], exact, 10)
                )
        if ann:
            ms, tuned = await time_async(
                lambda q=qvec: store.vector_search(
                    "traces", "vec_summary", q, Scope.visible(ns), 10, columns=["id"]
                )
            )
            if keep:
                samples.add("ann_tuned", ms)
                recall.setdefault("ann_tuned", []).append(
                    metrics.overlap_at_k([r["id"] for r in tuned], exact, 10)
                )
            # the same tuned ANN query with the visibility filter applied after the search, and
            # with no filter: how much of the ANN time is the prefilter
            for name, post in (("ann_tuned_postfilter", True), ("ann_tuned_nofilter", False)):
                ms, got2 = await time_async(lambda q=qvec, p=post: _ann_variant(store, q, where, p))
                if keep:
                    samples.add(name, ms)
                    recall.setdefault(name, []).append(metrics.overlap_at_k(got2, exact, 10))
        query = bench_query(ns, text, f"{label}-r{i}")
        ctx = served_context(core, query, qvec, tables)
        ms, res = await time_async(lambda c=ctx: retrieve(c))
        if keep:
            samples.add("retrieval_no_embed", ms)
            # where the time goes: the engine's own per-tier clocks (tiers run concurrently)
            samples.add("tier1_skills", res.tier_latency_ms.tier1)
            samples.add("tier2_traces", res.tier_latency_ms.tier2)
            samples.add("tier3_world_models", res.tier_latency_ms.tier3)
            hits = [(x.ref_id, round(float(x.score), 6)) for x in res.hits]
            answered["retrieval"].update(repr(hits).encode())
        turn = bench_turn(ns, f"{label}-t{i}", text)
        ms, res = await time_async(lambda t=turn: core.turn_start(t))
        if keep:
            samples.add("turn_start", ms)
            hits_seen += bool(res.hits)
            answered["turn_start_ids"].update(repr([x.ref_id for x in res.hits]).encode())
    return {
        "latency_ms": {k: v.as_dict() for k, v in samples.summaries().items()},
        "recall_at_10_vs_exact": {k: round(metrics.mean(v), 4) for k, v in recall.items()},
        "turn_start_with_hits": f"{hits_seen}/{len(queries) - warmup}",
        "results_digest": {k: h.hexdigest()[:16] for k, h in answered.items()},
    }


async def run_size(
    size: int,
    corpus: SyntheticCorpus,
    embedder: Any,
    n_queries: int,
    warmup: int,
    ann_threshold: int,
    ann_phase: bool,
    seed: int,
    footprint: bool = True,
    served_only: bool = False,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``served_only`` (1M, ``--size full``): the served path and its baselines (exact numpy,
    LanceDB flat) only — no seed-design SQLite copy and no separate footprint processes, which
    would each hold another copy of the vectors."""
    from stratamem.core.engine.assemble import open_local_core

    out: dict[str, Any] = {"rows": size, "queries": n_queries - warmup, "warmup": warmup}
    queries = query_texts(seed, n_queries)
    with tempfile.TemporaryDirectory(prefix=f"bench-scale-{size}-") as tmp:
        home = Path(tmp)
        core = await open_local_core(
            home, embedder=embedder, **{**PRODUCTION_OVERRIDES, **(overrides or {})}
        )
        try:
            t0 = time.perf_counter()
            matrix = await load_store(core.store, corpus, size)
            out["load_s"] = round(time.perf_counter() - t0, 2)
            ids = np.array([f"syn-{i:07d}" for i in range(size)])
            t0 = time.perf_counter()
            await core.store.ensure_fts("traces")
            out["fts_index_s"] = round(time.perf_counter() - t0, 2)
            t0 = time.perf_counter()
            await core.store.optimize()
            out["optimize_s"] = round(time.perf_counter() - t0, 2)
            # the rows were written behind the store's back: rebuild the in-memory mirror (as at a
            # restart), including its ANN graph when the table passes the threshold
            t0 = time.perf_counter()
            await core.store.reload_hot()
            out["hot_load_s"] = round(time.perf_counter() - t0, 2)
            if core.store.hot is not None:
                out["hot"] = core.store.hot.stats()["traces"]
            # the word store of query expansion, built from the loaded rows (as for an older home)
            vocab = core.services.vocab
            if vocab.enabled:
                t0 = time.perf_counter()
                await vocab.build()
                st = await vocab.store()
                out["vocab"] = {
                    "build_s": round(time.perf_counter() - t0, 2),
                    "words": len(st),
                    "array_bytes": st.nbytes(),
                }
            out["memory_mb_after_load"] = memory_mb()
            seed_db = None if served_only else SeedDesign(home / "seed.db", ids, matrix)
            try:
                out["flat"] = await _measure(
                    core, embedder, ids, matrix, queries, warmup, False, "flat", seed_db
                )
            finally:
                if seed_db is not None:
                    seed_db.close()
            out["memory_mb"] = memory_mb()
            if ann_phase:
                # the store reads its settings through the home's storage section: set it there
                core.config["storage"]["ann_threshold_rows"] = (
                    ann_threshold if size >= ann_threshold else 1
                )
                t0 = time.perf_counter()
                built = await core.store.ensure_indexes()
                out["ann_index_s"] = round(time.perf_counter() - t0, 2)
                out["ann_built"] = built
                out["ann_forced_below_threshold"] = size < ann_threshold
                q2 = query_texts(seed + 100, n_queries)
                out["ann"] = await _measure(core, embedder, ids, matrix, q2, warmup, True, "ann")
            out["disk_mb"] = round(dir_bytes(home / "data") / 1e6, 1)
        finally:
            await core.shutdown()
        if footprint and not served_only:
            # peak memory of recall, the engine and the seed design each in its own process
            from bench.footprint import compare

            qv = np.stack([np.asarray(embedder.embed_query(t), dtype=np.float32) for t in queries])
            out["footprint"] = await asyncio.to_thread(
                compare,
                home,
                matrix,
                qv,
                queries,
                model=str(getattr(embedder, "model", "") or "none"),
                dim=int(matrix.shape[1]),
            )
        del matrix
    await asyncio.sleep(0)
    return out
