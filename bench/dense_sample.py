"""The LanceDB path's sample for the name-stripped dense query (retrieval/dense_query.py): read per
query (the code before the cache, reproduced by emptying the cache before each query) against read
once per table version and reused, side by side on the same store and queries.

The hot index is off (``storage.hot_index: false``: the path a namespace evicted past
``storage.hot_index_max_mb`` takes too). Each query is timed both ways back to back, the order
alternating per query; ``sample_stage`` is the dense-query step alone, ``retrieval_no_embed`` the
whole served retrieval with its query vector already computed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import AGENT, SyntheticCorpus, bench_query, load_store, query_texts
from bench.scaling import PRODUCTION_OVERRIDES, scoped_tables, served_context
from bench.stats import Samples, fmt, time_async


async def run_dense_sample(
    corpus: SyntheticCorpus, embedder: Any, rows: int, n_queries: int, warmup: int, seed: int
) -> dict[str, Any]:
    from stratamem.contract.dtos import Namespace
    from stratamem.core.engine.assemble import open_local_core
    from stratamem.core.retrieval.dense_query import cache_for
    from stratamem.core.retrieval.engine import _Run, retrieve

    ns = Namespace(agent_kind=AGENT)
    samples = Samples()
    with tempfile.TemporaryDirectory(prefix="bench-dense-sample-") as tmp:
        overrides = {**PRODUCTION_OVERRIDES, "storage__hot_index": False}
        core = await open_local_core(Path(tmp), embedder=embedder, **overrides)
        try:
            await load_store(core.store, corpus, rows)
            await core.store.ensure_fts("traces")
            await core.store.optimize()
            cache = cache_for(core.store)
            assert cache is not None
            tables = scoped_tables(core.store, ns)
            queries = query_texts(seed + 200, n_queries)
            for i, text in enumerate(queries):
                qvec = np.asarray(embedder.embed_query(text), dtype=np.float32)
                query = bench_query(ns, text, f"ds-{i}", reason="search")
                ctx = served_context(core, query, qvec, tables)
                assert ctx.hot is None  # the LanceDB path
                await _Run(ctx).dense_query_text()  # this query's sample is cached
                for cached in (False, True) if i % 2 else (True, False):
                    label = "cached" if cached else "per_query"
                    if not cached:
                        cache.clear()
                    ms, _ = await time_async(lambda c=ctx: _Run(c).dense_query_text())
                    if i >= warmup:
                        samples.add(f"sample_stage_{label}", ms)
                    if not cached:
                        cache.clear()
                    ms, _ = await time_async(lambda c=ctx: retrieve(c))
                    if i >= warmup:
                        samples.add(f"retrieval_no_embed_{label}", ms)
            reads = cache.reads
        finally:
            await core.shutdown()
    lat = {k: v.as_dict() for k, v in samples.summaries().items()}
    out: dict[str, Any] = {
        "rows": rows,
        "queries": n_queries - warmup,
        "sample_reads": reads,
        "latency_ms": lat,
    }
    for stage in ("sample_stage", "retrieval_no_embed"):
        per_query = lat[f"{stage}_per_query"]["median"]
        cached_ms = lat[f"{stage}_cached"]["median"]
        out[f"{stage}_ratio_cached_vs_per_query"] = (
            round(cached_ms / per_query, 3) if per_query else None
        )
    return out


def render(ds: dict[str, Any]) -> list[str]:
    """The report's section: medians side by side and the ratios."""
    lat = ds["latency_ms"]
    lines = [
        "",
        "## LanceDB path: the dense query's sample, per query vs cached per table version",
        "",
        f"{ds['rows']:,} synthetic traces, hot index off, {ds['queries']} queries, each timed both "
        "ways back to back (`per_query`: the cache emptied first, as before the cache). Median "
        "ms; ratio = cached / per query.",
        "",
        "| stage | per query | cached | ratio |",
        "|---|---|---|---|",
    ]
    for stage in ("sample_stage", "retrieval_no_embed"):
        lines.append(
            f"| {stage} | {fmt(lat[f'{stage}_per_query']['median'])} | "
            f"{fmt(lat[f'{stage}_cached']['median'])} | {ds[f'{stage}_ratio_cached_vs_per_query']} |"
        )
    return lines
