"""Does the same question over the same memories get the same answer in another process? Per stage.

bench/results/determinism-session12.md. Build a home once as the scaling bench does, then run the
served path's questions (``served_profile.py``'s 60, retrieval without the embed) in as many
processes as wanted, each on its own copy of the home (hash seeds, load, settings as you like),
and compare what each stage handed on::

    python bench/stage_digests.py --home H --build [--rows 100000]
    PYTHONHASHSEED=1 python bench/stage_digests.py --home H --out A.json [--set KEY=VALUE ...]
    python bench/stage_digests.py --compare A.json B.json

Recorded per question (the second of two passes: caches warm): the ANN graph's proposals
(``Ann.search``), the vector channel (``HotTable.vector``), BM25 (``bm25_hits``), the query
expansion's tokens and the hits; per process the slots' ids, the word store's word order and the
query vectors. The stages are read by wrapping those functions in this process only.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.getcwd())
os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

STAGES = ("ann", "vector", "bm25", "expansion", "final")


def digest(x: Any) -> str:
    return hashlib.sha256(repr(x).encode()).hexdigest()[:12]


def compare(a_path: Path, b_path: Path) -> None:
    a, b = (json.loads(p.read_text()) for p in (a_path, b_path))
    for key in ("digest", "slot_ids", "vocab_order", "qvecs", "load_start", "load_end"):
        print(f"{key}: {a.get(key)} | {b.get(key)}")
    differ = {s: [] for s in STAGES}
    for i, (x, y) in enumerate(zip(a["stages"], b["stages"], strict=True)):
        for s in STAGES:
            if x.get(s) != y.get(s):
                differ[s].append(i)
    for s, qs in differ.items():
        print(f"{s}: {len(qs)} questions differ {qs}")


def recorder() -> tuple[dict[str, list[Any]], Any]:
    """Wrap the stages' functions; returns the per-question record and an undo."""
    from stratamem.core.hotindex import ann as ann_mod
    from stratamem.core.hotindex import table as table_mod
    from stratamem.core.retrieval import hot_channels, hot_tiers

    rec: dict[str, list[Any]] = {}
    saved = (
        table_mod.HotTable.vector,
        ann_mod.Ann.search,
        hot_channels.bm25_hits,
        hot_tiers.expansion_tokens,
    )
    vector, search, bm25, expansion = saved

    def rounded(got: Any) -> list[tuple[int, float]]:
        return [(int(s), round(float(x), 6)) for s, x in got]

    def vector_(self: Any, col: str, qvec: Any, mask: Any, limit: int, keep: Any = None) -> Any:
        got = vector(self, col, qvec, mask, limit, keep)
        rec.setdefault("vector", []).append((col, limit, rounded(got)))
        return got

    def search_(self: Any, qvec: Any, count: int) -> Any:
        got = search(self, qvec, count)
        rec.setdefault("ann", []).append((count, got.tolist()))
        return got

    def bm25_(*a: Any, **k: Any) -> Any:
        got = bm25(*a, **k)
        rec.setdefault("bm25", []).append(rounded(got))
        return got

    def expansion_(cq: Any) -> Any:
        got = expansion(cq)
        rec.setdefault("expansion", []).append(sorted((got or {}).items()))
        return got

    table_mod.HotTable.vector = vector_  # type: ignore[method-assign]
    ann_mod.Ann.search = search_  # type: ignore[method-assign]
    hot_channels.bm25_hits = bm25_
    hot_tiers.expansion_tokens = expansion_

    def undo() -> None:
        table_mod.HotTable.vector, ann_mod.Ann.search = saved[0], saved[1]  # type: ignore[method-assign]
        hot_channels.bm25_hits, hot_tiers.expansion_tokens = saved[2], saved[3]

    return rec, undo


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--home", type=Path)
    p.add_argument("--build", action="store_true")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--out", type=Path)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--compare", nargs=2, type=Path)
    args = p.parse_args()
    if args.compare:
        compare(*args.compare)
        return

    from bench.corpus import AGENT, bench_query, build_corpus, load_store, query_texts
    from bench.scaling import PRODUCTION_OVERRIDES, scoped_tables, served_context
    from stratamem.contract.dtos import Namespace
    from stratamem.core.embedding import load_embedder
    from stratamem.core.engine.assemble import open_local_core
    from stratamem.core.retrieval.engine import retrieve

    overrides = dict(PRODUCTION_OVERRIDES)
    for kv in args.set:
        k, _, v = kv.partition("=")
        overrides[k] = json.loads(v) if v[:1] in '0123456789-tfn[{"' else v
    embedder = load_embedder({"cache": {"enabled": False}})
    if args.build:
        core = await open_local_core(args.home, embedder=embedder, **overrides)
        try:
            await load_store(core.store, build_corpus(embedder, 7), args.rows)
            await core.store.ensure_fts("traces")
            await core.store.optimize()
        finally:
            await core.shutdown()
        return

    out: dict[str, Any] = {"load_start": os.getloadavg(), "seed": os.environ.get("PYTHONHASHSEED")}
    with tempfile.TemporaryDirectory(prefix="stages-") as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(args.home, home)  # one process owns a home: each run gets its own copy
        t0 = time.perf_counter()
        core = await open_local_core(home, embedder=embedder, **overrides)
        try:
            await core.store.reload_hot()  # waits for the graph
            vocab = core.services.vocab
            if vocab is not None and vocab.enabled:
                await vocab.build()
                out["vocab_order"] = digest(list((await vocab.store()).words))
            out["open_s"] = round(time.perf_counter() - t0, 1)
            if core.store.hot is not None:  # storage.hot_index off: the LanceDB path
                t = core.store.hot.tables["traces"]
                out["slot_ids"] = digest(list(t.ids))
                out["graph"] = {c: len(a) if a is not None else None for c, a in t.ann.items()}
            ns = Namespace(agent_kind=AGENT)
            tables = scoped_tables(core.store, ns)
            queries = query_texts(7, 60)
            vecs = [np.asarray(embedder.embed_query(q), dtype=np.float32) for q in queries]
            out["qvecs"] = digest(b"".join(v.tobytes() for v in vecs))

            def ctx_of(i: int, tag: str) -> Any:
                q = bench_query(ns, queries[i], f"{tag}-{i}")
                return served_context(core, q, vecs[i], tables)

            rec, undo = recorder()
            try:
                for i in range(len(queries)):
                    await retrieve(ctx_of(i, "w"))
                whole = hashlib.sha256()
                stages = []
                for i in range(len(queries)):
                    rec.clear()
                    res = await retrieve(ctx_of(i, "d"))
                    hits = [(x.ref_id, round(float(x.score), 6)) for x in res.hits]
                    whole.update(repr(hits).encode())  # served_profile.py's digest
                    got = {k: digest(v) for k, v in rec.items()}
                    stages.append({**got, "final": digest(hits), "hits": hits})
            finally:
                undo()
            out["digest"] = whole.hexdigest()[:16]
            out["stages"] = stages
        finally:
            await core.shutdown()
    out["load_end"] = os.getloadavg()
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k != "stages"}))


if __name__ == "__main__":
    asyncio.run(main())
