"""The LanceDB path's retrieval (hot index off) in two checkouts side by side: time per query and
the results, which must be identical.

    python -m bench.lance_fetch --base /path/to/other/worktree --rows 1000,10000 --out doc.md

Each checkout runs in a process of its own (``PYTHONPATH`` puts its ``packages/*/src`` first), on
the same synthetic store and queries, in ABBA order per size so both see the same minutes of a
shared machine. Timed per query: ``search`` without the embed (the served path with the query
vector already computed, ``now`` fixed, the never-written learned tables left out as ``retrieve``
leaves them) and ``turn_start`` (routing, the embed and recall). The
search results (ids, order, scores, score details, snippets, the injected packet) are compared
exactly; ``turn_start`` by hit ids and order (its ``now`` is the wall clock). Each search's
stages are timed around ``Deadline.run`` too (a stage's time per search; the channels of a tier
run concurrently, so stages overlap).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOW_MS = 1_736_000_000_000


def _src_path(tree: Path) -> str:
    return os.pathsep.join(str(p) for p in sorted((tree / "packages").glob("*/src")))


async def _drive(rows: int, queries: int, seed: int, hot: bool) -> dict[str, Any]:
    import dataclasses

    import numpy as np

    from bench.corpus import AGENT, bench_query, build_corpus, load_store, query_texts
    from bench.scaling import PRODUCTION_OVERRIDES, scoped_tables, served_context
    from stratamem.contract.dtos import Namespace, TurnInput
    from stratamem.core.embedding import load_embedder
    from stratamem.core.engine.assemble import open_local_core
    from stratamem.core.retrieval import deadline
    from stratamem.core.retrieval.engine import retrieve

    stages: dict[str, list[float]] = {}
    timing = False
    run_stage = deadline.Deadline.run

    async def timed(self: Any, stage: str, factory: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await run_stage(self, stage, factory)
        finally:
            if timing:
                stages.setdefault(stage, []).append((time.perf_counter() - t0) * 1000)

    deadline.Deadline.run = timed  # type: ignore[method-assign]

    embedder = load_embedder({"cache": {"enabled": False}})
    corpus = build_corpus(embedder, seed)
    ns = Namespace(agent_kind=AGENT)
    search_ms: list[float] = []
    search_cpu: list[float] = []
    turn_ms: list[float] = []
    turn_cpu: list[float] = []
    results: list[Any] = []
    turns: list[Any] = []
    with tempfile.TemporaryDirectory(prefix=f"bench-lance-fetch-{rows}-") as tmp:
        overrides = {**PRODUCTION_OVERRIDES, "storage__hot_index": hot}
        core = await open_local_core(Path(tmp), embedder=embedder, **overrides)
        try:
            await load_store(core.store, corpus, rows)
            await core.store.ensure_fts("traces")
            await core.store.optimize()
            await core.store.reload_hot()
            # as ``retrieve(core=...)`` builds them: a never-written learned table is not queried
            tables = {
                k: v if k == "traces" or core.store.may_have_rows(k) else None
                for k, v in scoped_tables(core.store, ns).items()
            }
            texts = query_texts(seed + 300, queries)
            vecs = [np.asarray(embedder.embed_query(t), dtype=np.float32) for t in texts]
            for rnd in range(2):  # the first round warms LanceDB's caches and the code paths
                for i, text in enumerate(texts):
                    q = bench_query(ns, text, f"lf-{i}", reason="search")
                    ctx = dataclasses.replace(
                        served_context(core, q, vecs[i], tables), now_ms=NOW_MS
                    )
                    assert (ctx.hot is None) != hot
                    timing = rnd == 1
                    c0, t0 = time.process_time(), time.perf_counter()
                    res = await retrieve(ctx)
                    timing = False
                    ms = (time.perf_counter() - t0) * 1000
                    cpu = (time.process_time() - c0) * 1000
                    turn = TurnInput(
                        agent=AGENT,
                        session_id=f"lt-{rnd}-{i}",
                        user_text=text,
                        ts=NOW_MS,
                        namespace=ns,
                    )
                    c0, t0 = time.process_time(), time.perf_counter()
                    started = await core.turn_start(turn)
                    tms = (time.perf_counter() - t0) * 1000
                    tcpu = (time.process_time() - c0) * 1000
                    if rnd == 0:
                        results.append(_result(res))
                        turns.append(_turn_ids(started))
                        continue
                    search_ms.append(ms)
                    search_cpu.append(cpu)
                    turn_ms.append(tms)
                    turn_cpu.append(tcpu)
        finally:
            await core.shutdown()
    return {
        "search_ms": search_ms,
        "search_cpu_ms": search_cpu,
        "turn_start_ms": turn_ms,
        "turn_start_cpu_ms": turn_cpu,
        "results": results,
        "turns": turns,
        # each stage's calls (stages of one tier run concurrently: they overlap)
        "stages": stages,
        "searches": len(search_ms),
        "core": __import__("stratamem.core.retrieval.engine", fromlist=["x"]).__file__,
    }


def _result(res: Any) -> dict[str, Any]:
    return {
        "hits": [
            [h.ref_id, h.ref_kind, h.tier, h.score, h.snippet, h.score_details] for h in res.hits
        ],
        "context": res.injected_context,
        "cut_off": res.cut_off,
    }


def _turn_ids(started: Any) -> list[str]:
    return [h.ref_id for h in started.hits]


def _run(tree: Path, rows: int, queries: int, seed: int, hot: bool) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": _src_path(tree), "LANCEDB_LOG": "error"}
    env["HF_HUB_OFFLINE"] = "1"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [sys.executable, "-m", "bench.lance_fetch", "--drive", str(rows)]
        cmd += ["--queries", str(queries), "--seed", str(seed), "--json", out.name]
        cmd += ["--hot"] if hot else []
        subprocess.run(cmd, check=True, env=env, cwd=ROOT)
        got: dict[str, Any] = json.loads(Path(out.name).read_text())
    return got


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.lance_fetch", description=__doc__)
    p.add_argument("--base", type=Path, help="the other checkout (e.g. a worktree of main)")
    p.add_argument("--rows", default="1000,10000")
    p.add_argument("--queries", type=int, default=30)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--hot", action="store_true", help="the hot path instead (it must not move)")
    p.add_argument("--out", type=Path)
    p.add_argument("--drive", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.drive:
        got = asyncio.run(_drive(args.drive, args.queries, args.seed, args.hot))
        assert args.json is not None
        args.json.write_text(json.dumps(got))
        return 0
    if args.base is None:
        p.error("--base is required")
    path = "hot path" if args.hot else "LanceDB path (`storage.hot_index=false`)"
    lines = [
        f"## {path}: base `{args.base}` vs this checkout, side by side (ABBA per size)",
        "",
        f"{args.queries} queries per size, timed after a warm-up round; load average at start "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}.",
        "",
        "Median per query; wall = elapsed, CPU = the process's CPU time over the call (every"
        " thread: LanceDB's, the embedder's), less sensitive to the machine's load.",
        "",
        "| traces | what | base | after | ratio |",
        "|---|---|---|---|---|",
    ]
    for n in (int(x) for x in args.rows.split(",") if x):
        runs: dict[str, list[dict[str, Any]]] = {"base": [], "after": []}
        for who in ("base", "after", "after", "base"):
            tree = args.base if who == "base" else ROOT
            runs[who].append(_run(tree, n, args.queries, args.seed, args.hot))
            print(f"{n} {who}: {runs[who][-1]['core']}", file=sys.stderr)
        med = {
            (who, key): _median([x for r in runs[who] for x in r[key]])
            for who in runs
            for key in ("search_ms", "search_cpu_ms", "turn_start_ms", "turn_start_cpu_ms")
        }
        same = all(a["results"] == runs["base"][0]["results"] for a in runs["after"])
        same_turns = all(a["turns"] == runs["base"][0]["turns"] for a in runs["after"])
        for key, what in (
            ("search_ms", "search no-embed, wall"),
            ("search_cpu_ms", "search no-embed, CPU"),
            ("turn_start_ms", "turn_start, wall"),
            ("turn_start_cpu_ms", "turn_start, CPU"),
        ):
            b, a = med[("base", key)], med[("after", key)]
            lines.append(f"| {n:,} | {what} | {b:.1f} ms | {a:.1f} ms | {a / b:.2f} |")
        lines.append(
            f"| {n:,} | search results identical (ids, order, scores, details, snippets, packet)"
            f" | | {'yes' if same else '**no**'} | |"
        )
        names = sorted({k for r in runs["base"] + runs["after"] for k in r["stages"]})
        for stage in names:
            cell = []
            for who in ("base", "after"):
                calls = [x for r in runs[who] for x in r["stages"].get(stage, [])]
                per = len(calls) / max(sum(r["searches"] for r in runs[who]), 1)
                cell.append(f"{_median(calls):.1f} ms × {per:.1f}" if calls else "—")
            lines.append(
                f"| {n:,} | stage `{stage}`: median per call × calls per search | "
                f"{cell[0]} | {cell[1]} | |"
            )
        lines.append(
            f"| {n:,} | turn_start hits identical (ids, order) | | "
            f"{'yes' if same_turns else '**no**'} | |"
        )
        print("\n".join(lines[-12:]), file=sys.stderr)
    lines += ["", f"Load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
