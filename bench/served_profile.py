"""The served path at one size, for profiling and A/B of two trees (bench/results/hotpath-session10.md).

Run from a tree's root with a python that imports that tree (``PYTHONPATH=<tree>/packages/core/src``
for an archive of an older commit)::

    python bench/served_profile.py --rows 100000 --modes digest,time,cprofile --out DIR

Builds an N-trace home the way bench/scaling.py does (load, FTS, optimize, reload_hot, the word
store when the tree has one), then per mode:

  time      per query: min of 3 retrieve() without the embed (the repeats find warm caches),
            median over the queries; thread CPU time of one pass; turn_start p50; the side files'
            reads per retrieval (os.pread and os.preadv calls, the hot index's side files' system
            calls, and marshal.loads calls counted; the bytes read by system calls from
            /proc/self/io's rchar: a scan through a mapping reads none)
  cprofile  pstats of the retrieve() loop (top by tottime and cumulative)
  loop      retrieve() (and turn_start with --turns) in hot_loop for --seconds (for py-spy)
  digest    sha of every query's (hit ids, scores) list, to compare trees
  tsdigest  the same for turn_start (ids only in the digest; hits and scores written to a file)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import io
import json
import marshal
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.getcwd())
os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _rchar() -> int:
    """Bytes this process has read with read system calls (0 where /proc/self/io is missing)."""
    try:
        with open("/proc/self/io") as f:
            return next((int(ln.split()[1]) for ln in f if ln.startswith("rchar:")), 0)
    except OSError:
        return 0


class Counter:
    """Calls of os.pread, os.preadv (also where a module took it at import: slotfile's
    ``_PREADV``, session 18's chunked reads) and marshal.loads while installed."""

    def __init__(self) -> None:
        self.n = {"pread": 0, "preadv": 0, "marshal": 0, "rchar": 0}
        self._pread = os.pread
        self._preadv = getattr(os, "preadv", None)
        self._loads = marshal.loads
        try:
            from stratamem.core.hotindex import slotfile
        except ImportError:  # an older tree
            slotfile = None  # type: ignore[assignment]
        self._slotfile = slotfile if hasattr(slotfile, "_PREADV") else None

    def install(self) -> None:
        def pread(*a, **k):  # type: ignore[no-untyped-def]
            self.n["pread"] += 1
            return self._pread(*a, **k)

        def preadv(*a, **k):  # type: ignore[no-untyped-def]
            self.n["preadv"] += 1
            return self._preadv(*a, **k)  # type: ignore[misc]

        def loads(*a, **k):  # type: ignore[no-untyped-def]
            self.n["marshal"] += 1
            return self._loads(*a, **k)

        os.pread = pread
        if self._preadv is not None:
            os.preadv = preadv
            if self._slotfile is not None:
                self._slotfile._PREADV = preadv
        marshal.loads = loads
        self.n["rchar"] = -_rchar()

    def remove(self) -> None:
        self.n["rchar"] += _rchar()
        os.pread = self._pread
        if self._preadv is not None:
            os.preadv = self._preadv
            if self._slotfile is not None:
                self._slotfile._PREADV = self._preadv
        marshal.loads = self._loads


async def hot_loop(fn, seconds: float) -> int:  # type: ignore[no-untyped-def]
    t_end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < t_end:
        await fn(n)
        n += 1
    return n


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--modes", default="time,digest,cprofile")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--turns", action="store_true")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--set", action="append", default=[])
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    from bench.corpus import AGENT, bench_query, bench_turn, build_corpus, load_store, query_texts
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
    corpus = build_corpus(embedder, 7)
    out: dict = {"rows": args.rows, "cwd": os.getcwd(), "load_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix=f"prof-{args.rows}-") as tmp:
        core = await open_local_core(Path(tmp), embedder=embedder, **overrides)
        try:
            t0 = time.perf_counter()
            await load_store(core.store, corpus, args.rows)
            await core.store.ensure_fts("traces")
            await core.store.optimize()
            await core.store.reload_hot()
            out["build_s"] = round(time.perf_counter() - t0, 1)
            vocab = getattr(getattr(core, "services", None), "vocab", None)
            if vocab is not None and vocab.enabled:
                await vocab.build()
                out["vocab_words"] = len(await vocab.store())
            ns = Namespace(agent_kind=AGENT)
            tables = scoped_tables(core.store, ns)
            queries = query_texts(7, args.queries)
            vecs = [np.asarray(embedder.embed_query(t), dtype=np.float32) for t in queries]

            def ctx_of(i: int, tag: str):  # type: ignore[no-untyped-def]
                q = bench_query(ns, queries[i], f"{tag}-{i}")
                return served_context(core, q, vecs[i], tables)

            for i in range(len(queries)):  # warm caches
                await retrieve(ctx_of(i, "w"))
            modes = args.modes.split(",")
            if "digest" in modes:
                h = hashlib.sha256()
                per = []
                for i in range(len(queries)):
                    res = await retrieve(ctx_of(i, "d"))
                    item = [(x.ref_id, round(float(x.score), 6)) for x in res.hits]
                    per.append(hashlib.sha256(repr(item).encode()).hexdigest()[:12])
                    h.update(repr(item).encode())
                out["digest"] = h.hexdigest()[:16]
                out["per_query_digest"] = per
            if "tsdigest" in modes:
                h = hashlib.sha256()
                items = []
                for i in range(len(queries)):
                    turn = bench_turn(ns, f"tsd-{i}", queries[i])
                    res = await core.turn_start(turn)
                    item = [(x.ref_id, round(float(x.score), 3)) for x in res.hits]
                    items.append(item)
                    h.update(repr([x[0] for x in item]).encode())
                out["turn_start_ids_digest"] = h.hexdigest()[:16]
                (args.out / "turn_start_hits.json").write_text(json.dumps(items))
            if "time" in modes:
                cnt = Counter()
                per_q = []
                cnt.install()
                for i in range(len(queries)):
                    best = 1e9
                    for _ in range(3):
                        t0 = time.perf_counter()
                        await retrieve(ctx_of(i, "t"))
                        best = min(best, (time.perf_counter() - t0) * 1000)
                    per_q.append(best)
                n_calls = 3 * len(queries)
                cnt.remove()
                out["pread_per_retrieval"] = round(cnt.n["pread"] / n_calls, 1)
                out["preadv_per_retrieval"] = round(cnt.n["preadv"] / n_calls, 1)
                out["read_kb_per_retrieval"] = round(cnt.n["rchar"] / n_calls / 1024, 1)
                out["marshal_per_retrieval"] = round(cnt.n["marshal"] / n_calls, 1)
                out["retrieval_min3_p50_ms"] = round(statistics.median(per_q), 3)
                # thread CPU time too (load-insensitive)
                cpu = []
                for i in range(len(queries)):
                    t0 = time.thread_time()
                    await retrieve(ctx_of(i, "c"))
                    cpu.append((time.thread_time() - t0) * 1000)
                out["retrieval_cpu_p50_ms"] = round(statistics.median(cpu), 3)
                ts = []
                for i in range(len(queries)):
                    turn = bench_turn(ns, f"ts-{i}", queries[i])
                    t0 = time.perf_counter()
                    await core.turn_start(turn)
                    ts.append((time.perf_counter() - t0) * 1000)
                out["turn_start_p50_ms"] = round(statistics.median(ts), 3)
                em = []
                for t in queries:
                    t0 = time.perf_counter()
                    embedder.embed_query(t)
                    em.append((time.perf_counter() - t0) * 1000)
                out["embed_query_p50_ms"] = round(statistics.median(em), 3)
            if "cprofile" in modes:
                pr = cProfile.Profile()
                pr.enable()
                for i in range(len(queries)):
                    await retrieve(ctx_of(i, "p"))
                pr.disable()
                for key in ("tottime", "cumulative"):
                    s = io.StringIO()
                    pstats.Stats(pr, stream=s).sort_stats(key).print_stats(45)
                    (args.out / f"cprofile-{key}.txt").write_text(s.getvalue())
            if "loop" in modes:

                async def one(n: int) -> None:
                    i = n % len(queries)
                    await retrieve(ctx_of(i, "l"))
                    if args.turns:
                        turn = bench_turn(ns, f"lt-{n}", queries[i])
                        await core.turn_start(turn)

                out["loop_iterations"] = await hot_loop(one, args.seconds)
        finally:
            await core.shutdown()
    out["load_end"] = os.getloadavg()
    (args.out / "prof.json").write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k != "per_query_digest"}, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
