"""The hot index's vector path, kernel by kernel, side by side in one process: the float32 scan
(``mat @ q``, one BLAS thread), and per vector layout (``--layouts``, ``storage.hot_vector_dtype``)
the quantised scan (``HotTable.vector``, no graph) and the HNSW graph's proposals rescored (one
graph shared by the layouts: each feeds it the same unit vectors), alternated query by query:
p50/p95, recall@10 against the exact float32 top-10, the graph's build time and the bytes per
vector. Decides ``storage.hot_ann_threshold_rows`` (where the exact scan stops beating the graph).

    python -m bench.hot_int8 --rows 10000,100000,300000 --layouts i8,i4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import numpy as np

from bench import metrics
from bench.corpus import build_corpus, query_texts


def _table(vecs: np.ndarray, cfg: dict[str, Any]) -> Any:
    from stratamem.core.hotindex.table import HotTable

    t = HotTable("traces", ["vec_summary"], vecs.shape[1], cfg)
    t.upsert(
        [
            {"id": f"r{i}", "vec_summary": v, "owner_agent_kind": "a", "priority": 0.5}
            for i, v in enumerate(vecs)
        ]
    )
    return t


def _p(xs: list[float]) -> dict[str, float]:
    return {
        "p50": round(float(np.percentile(xs, 50)), 3),
        "p95": round(float(np.percentile(xs, 95)), 3),
    }


async def run(rows: list[int], queries: int, seed: int, layouts: list[str]) -> dict[str, Any]:
    from stratamem.core.embedding import load_embedder
    from stratamem.core.hotindex.blas import limit_blas_threads

    limit_blas_threads(1)
    embedder = load_embedder({"cache": {"enabled": False}})
    corpus = build_corpus(embedder, seed)
    qvecs = [
        np.asarray(embedder.embed_query(q), dtype=np.float32) for q in query_texts(seed, queries)
    ]
    col = "vec_summary"
    out: dict[str, Any] = {}
    for n in rows:
        vecs, _m, _s = corpus.vectors_for(0, n)
        tables = {
            lay: _table(vecs, {"hot_ann_threshold_rows": 10**12, "hot_vector_dtype": lay})
            for lay in layouts
        }
        mask = np.ones(n, dtype=bool)
        first = tables[layouts[0]]
        t0 = time.perf_counter()
        await first.build_ann(col)
        build_s = time.perf_counter() - t0
        ann = first.ann[col]
        for t in tables.values():  # every layout feeds the graph the same unit vectors
            t.ann[col] = ann
        times: dict[str, list[float]] = {"f32_scan": []}
        recall: dict[str, list[float]] = {}
        for lay in layouts:
            for kind in ("scan", "ann"):
                times[f"{lay}_{kind}"], recall[f"{lay}_{kind}"] = [], []
        for q in qvecs:
            exact = metrics.exact_topk(vecs, q, 10).tolist()
            a = time.perf_counter()
            s = vecs @ q
            top = np.argpartition(-s, 19)[:20]
            top[np.argsort(-s[top])]
            times["f32_scan"].append((time.perf_counter() - a) * 1e3)
            for lay, t in tables.items():  # alternated query by query
                for kind, graph in (("scan", None), ("ann", ann)):
                    t.ann[col] = graph
                    a = time.perf_counter()
                    got = t.vector(col, q, mask, 20)
                    times[f"{lay}_{kind}"].append((time.perf_counter() - a) * 1e3)
                    found = [s for s, _ in got]
                    recall[f"{lay}_{kind}"].append(metrics.overlap_at_k(found, exact, 10))
        out[str(n)] = {
            "latency_ms": {k: _p(v) for k, v in times.items()},
            "recall_at_10_vs_f32_exact": {k: round(metrics.mean(v), 4) for k, v in recall.items()},
            "graph_build_s": round(build_s, 2),
            "bytes_per_vector": {
                "f32": vecs.shape[1] * 4,
                "graph": round(int(ann.index.memory_usage) / n) if ann is not None else 0,
                # resident: the flags; codes and scales in one side file, the rest in another
                **{lay: round(t.has[col].nbytes / n) for lay, t in tables.items()},
                **{
                    f"{lay}_codes_file": round(t.codes[col].file_bytes() / n)
                    for lay, t in tables.items()
                },
                **{
                    f"{lay}_file": round(t.resid[col].file_bytes() / n) for lay, t in tables.items()
                },
            },
        }
        print(json.dumps({n: out[str(n)]}), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="10000,100000,300000")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--layouts", default="i8,i4", help="storage.hot_vector_dtype values")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    res = asyncio.run(
        run(
            [int(x) for x in args.rows.split(",")],
            args.queries,
            args.seed,
            args.layouts.split(","),
        )
    )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
