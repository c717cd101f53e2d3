"""The hot index's HNSW graph (``hotindex/ann.py``): recall@10 against exact and latency per search
breadth, over the scaling corpus's vectors, the way ``HotTable.vector`` uses it (top 20 from
``limit × hot_ann_oversample`` candidates rescored exactly in float32). One JSON line per setting.

    python -m bench.ann_breadth --rows 100000,300000 --ef 160,320,574

``--ef 0`` stands for the configured, size-aware breadth. Build time is reported as wall and
process CPU seconds (the CPU figure is what a shared, loaded machine does not distort).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from bench.corpus import build_corpus, query_texts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ann_breadth", description=__doc__)
    p.add_argument("--rows", default="100000")
    p.add_argument("--ef", default="0,160,320")
    p.add_argument("--over", type=int, default=0, help="over-fetch factor (0: the configured one)")
    p.add_argument("--expansion-add", type=int, default=0)
    p.add_argument("--connectivity", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="build threads (0: the configured)")
    p.add_argument("--queries", type=int, default=120)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from stratamem.core.config.defaults import DEFAULTS
    from stratamem.core.embedding import load_embedder
    from stratamem.core.hotindex.ann import Ann

    emb = load_embedder({"cache": {"enabled": False}})
    corpus = build_corpus(emb, args.seed)
    half = args.queries // 2
    texts = query_texts(args.seed, half) + query_texts(args.seed + 100, args.queries - half)
    qv = np.stack([np.asarray(emb.embed_query(t), dtype=np.float32) for t in texts])
    cfg = dict(DEFAULTS["storage"])
    if args.expansion_add:
        cfg["hot_ann_expansion_add"] = args.expansion_add
    if args.connectivity:
        cfg["hot_ann_connectivity"] = args.connectivity
    if args.threads:
        cfg["hot_ann_threads"] = args.threads
    over = args.over or int(cfg["hot_ann_oversample"])
    limit = 20
    for n in (int(x) for x in args.rows.split(",") if x):
        mat = np.concatenate(
            [corpus.vectors_for(s, min(25_000, n - s))[0] for s in range(0, n, 25_000)]
        )
        exact = [set(np.argsort(-(mat @ q), kind="stable")[:10].tolist()) for q in qv]
        ann = Ann(mat.shape[1], cfg)
        aware = ann.expansion(n)  # (before the loop below sets other breadths)
        w0, c0 = time.perf_counter(), time.process_time()
        ann.add(np.arange(n), mat)
        build = {
            "build_wall_s": round(time.perf_counter() - w0, 1),
            "build_cpu_s": round(time.process_time() - c0, 1),
        }
        for ef in (int(x) for x in args.ef.split(",") if x):
            size_aware = ef == 0
            ef = aware if size_aware else ef
            ann.base_expansion, ann.ref_rows = ef, n  # this breadth at this size
            recall, ms = [], []
            for q, want in zip(qv, exact, strict=True):
                t0 = time.perf_counter()
                got = ann.search(q, limit * over)
                top = got[np.argsort(-(mat[got] @ q), kind="stable")[:limit]]
                ms.append(1000 * (time.perf_counter() - t0))
                recall.append(len(set(top[:10].tolist()) & want) / 10)
            row = {
                "rows": n,
                "ef": ef,
                "size_aware": size_aware,
                "over": over,
                "expansion_add": int(cfg["hot_ann_expansion_add"]),
                "connectivity": int(cfg["hot_ann_connectivity"]),
                "recall_at_10": round(float(np.mean(recall)), 4),
                "min_recall": min(recall),
                "p50_ms": round(float(np.median(ms)), 3),
                "p95_ms": round(float(np.percentile(ms, 95)), 3),
                **build,
                "loadavg": [round(x, 2) for x in os.getloadavg()],
            }
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
