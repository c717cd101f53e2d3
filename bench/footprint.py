"""Peak memory of recall, each design in a process of its own: the engine serving a stored home
(hot index loaded, retrieval without the embed) vs the seed design (SQLite + brute-force cosine)
over the same vectors and query vectors.

Neither process holds an embedder: as in the issue's comparison (both systems pointed at one shared
embedding endpoint), the query vectors come precomputed, so the figure is the recall side's own
memory. Peak = ``VmHWM`` of the process at exit; each child prints one JSON line.

    python -m bench.footprint seed --dir D --queries Q.npy
    python -m bench.footprint engine --home H --model M --dim 384 --queries Q.npy
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _memory() -> dict[str, float]:
    out: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, val = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(val.split()[0]) / 1024, 1)
    return out


def _seed(args: argparse.Namespace) -> dict[str, Any]:
    from bench.seed_design import SeedDesign

    matrix = np.load(args.dir / "vectors.npy")
    ids = np.array([f"syn-{i:07d}" for i in range(len(matrix))])
    db = SeedDesign(args.dir / "seed-footprint.db", ids, matrix)
    del matrix, ids
    ms = []
    for q in np.load(args.queries):
        t0 = time.perf_counter()
        db.search(q, 10)
        ms.append((time.perf_counter() - t0) * 1000)
    db.close()
    return {"p50_ms": round(statistics.median(ms), 3), **_memory()}


async def _engine(args: argparse.Namespace) -> dict[str, Any]:
    from bench.corpus import AGENT, bench_query
    from bench.scaling import PRODUCTION_OVERRIDES, scoped_tables, served_context
    from stratamem.contract.dtos import Namespace
    from stratamem.core.engine.assemble import open_local_core
    from stratamem.core.retrieval.engine import retrieve

    class StoredVectors:
        """The home's embedding model by name and dimension; queries arrive as vectors."""

        def __init__(self, model: str, dimension: int) -> None:
            self.model, self.dimension = model, dimension

    core = await open_local_core(
        args.home, embedder=StoredVectors(args.model, args.dim), **PRODUCTION_OVERRIDES
    )
    try:
        if core.store.hot is not None:
            await core.store.hot.settle()
        ns = Namespace(agent_kind=AGENT)
        store = core.store
        tables = scoped_tables(store, ns)
        ms = []
        for i, q in enumerate(np.load(args.queries)):
            query = bench_query(ns, args.texts[i % len(args.texts)])
            ctx = served_context(core, query, q, tables)
            t0 = time.perf_counter()
            await retrieve(ctx)
            ms.append((time.perf_counter() - t0) * 1000)
    finally:
        await core.shutdown()
    return {"p50_ms": round(statistics.median(ms), 3), **_memory()}


def _child(argv: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.footprint", *argv]
    env = {**os.environ, "LANCEDB_LOG": "error"}
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, timeout=900)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def compare(
    home: Path,
    matrix: np.ndarray,
    queries: np.ndarray,
    texts: list[str],
    *,
    model: str,
    dim: int,
) -> dict[str, Any]:
    """Both designs' peak and resident memory (MB) and p50 (ms) over the same vectors; the
    engine's home must be closed (one process owns a home)."""
    work = home / "footprint"
    work.mkdir(exist_ok=True)
    np.save(work / "vectors.npy", matrix)
    np.save(work / "queries.npy", queries)
    (work / "texts.json").write_text(json.dumps(texts))
    q = str(work / "queries.npy")
    seed = _child(["seed", "--dir", str(work), "--queries", q])
    engine = _child(
        [
            "engine",
            "--home",
            str(home),
            "--model",
            model,
            "--dim",
            str(dim),
            "--queries",
            q,
            "--texts",
            str(work / "texts.json"),
        ]
    )
    return {
        "seed_design": seed,
        "engine": engine,
        "peak_ratio": round(engine["VmHWM"] / seed["VmHWM"], 2) if seed.get("VmHWM") else None,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.footprint", description=__doc__)
    p.add_argument("kind", choices=("seed", "engine"))
    p.add_argument("--dir", type=Path)
    p.add_argument("--home", type=Path)
    p.add_argument("--model", default="")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=Path, required=True)
    p.add_argument("--texts", type=Path)
    args = p.parse_args(argv)
    if args.kind == "seed":
        out = _seed(args)
    else:
        import asyncio

        args.texts = json.loads(args.texts.read_text()) if args.texts else ["memory"]
        out = asyncio.run(_engine(args))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
