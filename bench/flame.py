"""Flame summary of the per-turn hot path: ``search`` (without the embed) and ``turn_start`` in a loop
over N synthetic traces, sampled by py-spy; prints the frames that hold the time (inclusive and self).

    python -m bench.flame --rows 1000,10000,100000 --out bench/results/flame-before.md

py-spy samples the whole process; only stacks inside ``hot_loop`` are summarised (loading the store
and building indexes are not the hot path).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LOOP_FRAME = "hot_loop"
#: tiers gathered as tasks run on stacks of their own (the event loop, not ``hot_loop``): a sample
#: whose stack holds a retrieval frame belongs to the loop too (an earlier version dropped them)
TASK_FRAMES = ("_Run.",)


async def hot_loop(
    core: Any, vecs: list[Any], queries: list[str], seconds: float, search_only: bool = False
) -> dict[str, Any]:
    """search without the embed, then turn_start with it, alternately, for ``seconds`` (only the
    search with ``search_only``: the per-query fixed cost without the embedder's threads)."""
    from bench.corpus import AGENT, bench_query, bench_turn
    from bench.scaling import scoped_tables, served_context
    from stratamem.contract.dtos import Namespace
    from stratamem.core.retrieval.engine import retrieve

    ns = Namespace(agent_kind=AGENT)
    store = core.store
    tables = scoped_tables(store, ns)
    t_end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < t_end:
        i = n % len(queries)
        query = bench_query(ns, queries[i], f"f-{n}")
        ctx = served_context(core, query, vecs[i], tables)
        await retrieve(ctx)
        n += 1
        if search_only:
            continue
        turn = bench_turn(ns, f"ft-{n}", queries[i])
        await core.turn_start(turn)
    return {"iterations": n}


async def _drive(
    rows: int, seconds: float, seed: int, search_only: bool, overrides: dict[str, Any]
) -> None:
    import numpy as np

    from bench.corpus import build_corpus, load_store, query_texts
    from bench.scaling import PRODUCTION_OVERRIDES
    from stratamem.core.embedding import load_embedder
    from stratamem.core.engine.assemble import open_local_core

    embedder = load_embedder({"cache": {"enabled": False}})
    corpus = build_corpus(embedder, seed)
    with tempfile.TemporaryDirectory(prefix=f"bench-flame-{rows}-") as tmp:
        core = await open_local_core(
            Path(tmp), embedder=embedder, **{**PRODUCTION_OVERRIDES, **overrides}
        )
        try:
            await load_store(core.store, corpus, rows)
            await core.store.ensure_fts("traces")
            await core.store.optimize()
            # the rows were written behind the store's back: rebuild the in-memory mirror (as at a
            # restart); an earlier version looked for it on the core, found nothing and profiled
            # the LanceDB path instead of the served one
            await core.store.reload_hot()
            queries = query_texts(seed, 20)
            vecs = [np.asarray(embedder.embed_query(t), dtype=np.float32) for t in queries]
            out = await hot_loop(core, vecs, queries, seconds, search_only)
            print(f"rows={rows} iterations={out['iterations']}", file=sys.stderr)
        finally:
            await core.shutdown()


def summarise(raw: Path, top: int = 25) -> tuple[int, list[tuple[str, int, int]]]:
    """(samples in the loop, [(frame, inclusive, self)]) from py-spy's collapsed output.

    Samples include idle ones (``--idle``): time the loop waits on LanceDB's native threads or an
    executor shows as the event loop's ``select``.
    """
    incl: collections.Counter[str] = collections.Counter()
    self_: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not any(LOOP_FRAME in f or f.startswith(TASK_FRAMES) for f in frames):
            continue
        c = int(count)
        total += c
        for f in set(frames):
            incl[f] += c
        self_[frames[-1]] += c
    # frames on every sampled stack (the event loop, the driver) say nothing
    rows = [f for f in sorted(incl, key=lambda f: -incl[f]) if incl[f] < 0.99 * total][:top]
    by_self = sorted(self_, key=lambda f: -self_[f])[:top]
    frames = list(dict.fromkeys(rows + by_self))
    return total, [(f, incl[f], self_[f]) for f in frames]


def _md(rows: int, total: int, frames: list[tuple[str, int, int]]) -> str:
    out = [f"### {rows:,} traces — {total} samples in the loop", ""]
    out.append("| frame | inclusive | self |")
    out.append("|---|---|---|")
    for f, inc, slf in frames:
        out.append(
            f"| `{f[:110]}` | {100 * inc / max(total, 1):.1f}% | {100 * slf / max(total, 1):.1f}% |"
        )
    return "\n".join(out) + "\n"


def _commit() -> str:
    try:
        got = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        return got.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.flame", description=__doc__)
    p.add_argument("--rows", default="1000,10000,100000")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--search-only", action="store_true", help="loop retrieval without the embed alone"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, e.g. storage__hot_index=false (profile the LanceDB path)",
    )
    p.add_argument("--drive", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    from bench.runner import config_overrides

    overrides = config_overrides(args)
    os.environ.setdefault("LANCEDB_LOG", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.drive:
        asyncio.run(_drive(args.drive, args.seconds, args.seed, args.search_only, overrides))
        return 0
    parts = [
        "# Hot-path flame summary",
        "",
        f"py-spy, {args.seconds:.0f} s of "
        + (
            "`search` without the embed"
            if args.search_only
            else "alternating `search` (no embed) and `turn_start`"
        )
        + f" per size, commit `{_commit()}`;"
        + (f" overrides `{overrides}`;" if overrides else "")
        + f" load average {os.getloadavg()[0]:.2f} at start. Inclusive = share of loop samples with the"
        " frame on the stack; self = share where it is the leaf.",
        "",
    ]
    for n in (int(x) for x in args.rows.split(",") if x):
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "raw.txt"
            cmd = ["py-spy", "record", "--format", "raw", "--rate", "200", "--idle", "--function"]
            cmd += ["-o", str(raw)]
            cmd += ["--", sys.executable, "-m", "bench.flame", "--drive", str(n)]
            cmd += ["--seconds", str(args.seconds), "--seed", str(args.seed), "--out", "-"]
            cmd += ["--search-only"] if args.search_only else []
            cmd += [f"--set={kv}" for kv in args.set]
            done = subprocess.run(
                cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
            )
            its = [ln for ln in done.stderr.splitlines() if ln.startswith(f"rows={n} ")]
            total, frames = summarise(raw)
            parts.append(_md(n, total, frames))
            if its:
                k = int(its[-1].rsplit("=", 1)[1])
                what = (
                    "`search` calls" if args.search_only else "iterations (`search` + `turn_start`)"
                )
                parts.append(
                    f"{k} {what} in {args.seconds:.0f} s:"
                    f" {1000 * args.seconds / max(k, 1):.1f} ms per iteration; Python on the loop"
                    f" thread {100 * total / (args.seconds * 200):.0f}% of the wall time (the rest"
                    " waits: LanceDB's native threads, executors, the embedder's threads).\n"
                )
    parts.append(f"Load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    args.out.write_text("\n".join(parts) + "\n", encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
