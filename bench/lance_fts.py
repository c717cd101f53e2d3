"""The LanceDB path's search when rows were written since its FTS index was built.

``storage.hot_index`` off (the path a namespace evicted past ``storage.hot_index_max_mb`` takes
too); no maintenance optimize during the run. Per size: searches with no write between them
(``idle``), then rounds of one captured turn applied by the writer (``apply``: turn_end + flush)
followed, after ``--gap-s``, by a search (``after_write``). On this code the new rows are folded
into the FTS index (storage/fts_cover.py): without a hot index the fold starts when the write
lands, and the search waits for what is left of it. Run from an older tree for the old figures
(no fold: the rows stay unindexed and are flat-scanned).

``python -m bench.lance_fts --rows 1000,10000,50000 --queries 20 --gap-s 2 --out DIR``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import machine
from bench.corpus import AGENT, BASE_TS, bench_query, build_corpus, load_store, query_texts
from bench.scaling import PRODUCTION_OVERRIDES, dir_bytes
from bench.stats import Samples


async def run_size(embedder: Any, rows: int, n: int, seed: int, gap_s: float) -> dict[str, Any]:
    from stratamem.contract.dtos import Namespace, TurnResult
    from stratamem.core.engine.assemble import open_local_core

    corpus = build_corpus(embedder, seed)
    ns = Namespace(agent_kind=AGENT)
    samples = Samples()
    with tempfile.TemporaryDirectory(prefix="bench-lance-fts-") as tmp:
        overrides = {**PRODUCTION_OVERRIDES, "storage__hot_index": False}
        core = await open_local_core(Path(tmp), embedder=embedder, **overrides)
        try:
            await load_store(core.store, corpus, rows)
            await core.store.ensure_fts("traces")
            await core.store.optimize()
            queries = query_texts(seed + 300, 2 * n)
            for text in queries[:n]:
                t0 = time.perf_counter()
                await core.search(bench_query(ns, text, reason="tool_driven"))
                samples.add("idle", (time.perf_counter() - t0) * 1000)
            disk0 = dir_bytes(Path(tmp))
            for i, text in enumerate(queries[n:]):
                t0 = time.perf_counter()
                await core.turn_end(
                    TurnResult(
                        agent=AGENT,
                        session_id="fts-bench",
                        user_text=text,
                        agent_text="noted",
                        ts=BASE_TS + (rows + i) * 60_000,
                        namespace=ns,
                    )
                )
                await core.flush(60)
                samples.add("apply", (time.perf_counter() - t0) * 1000)
                await asyncio.sleep(gap_s)  # the agent answering before the next turn's search
                t0 = time.perf_counter()
                await core.search(bench_query(ns, text, reason="tool_driven"))
                samples.add("after_write", (time.perf_counter() - t0) * 1000)
            cover = getattr(core.store, "fts", None)
            stats = await core.store.stats()
            out: dict[str, Any] = {
                "rows": rows,
                "rounds": n,
                "gap_s": gap_s,
                "folds": getattr(cover, "folds", None),
                "unindexed_after": stats["traces"].get("unindexed_rows"),
                "disk_growth_mb": round((dir_bytes(Path(tmp)) - disk0) / 2**20, 1),
                "latency_ms": {k: v.as_dict() for k, v in samples.summaries().items()},
            }
        finally:
            await core.shutdown()
    return out


async def main(argv: list[str] | None = None) -> int:
    from stratamem.core.embedding import load_embedder

    p = argparse.ArgumentParser(prog="python -m bench.lance_fts", description=__doc__)
    p.add_argument("--rows", default="1000,10000,50000")
    p.add_argument("--queries", type=int, default=20)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--gap-s", type=float, default=0.0, help="pause between a write and the search")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    embedder = load_embedder({})
    res: dict[str, Any] = {"load_avg_start": machine.load_average(), "sizes": []}
    for rows in (int(r) for r in args.rows.split(",")):
        got = await run_size(embedder, rows, args.queries, args.seed, args.gap_s)
        lat = got["latency_ms"]
        print(
            f"{rows:>8,} rows: search idle {lat['idle']['median']:.1f} ms, after a write "
            f"{lat['after_write']['median']:.1f} ms (p95 {lat['after_write']['p95']:.1f}), "
            f"apply {lat['apply']['median']:.1f} ms, folds {got['folds']}, "
            f"unindexed after {got['unindexed_after']}, disk +{got['disk_growth_mb']} MB",
            flush=True,
        )
        res["sizes"].append(got)
    res["load_avg_end"] = machine.load_average()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lance_fts.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(asyncio.run(main()))
