"""What a soak trace costs the hot index in memory, by structure, and the lexical channel's BM25
cost over the same texts (issue 16; the method of ``results/soak-session8.md`` §1).

    python -m bench.hot_bytes --rows 10000 --query-rows 10000,100000 --out /tmp/x.json

- **Bytes**: a ``HotTable`` filled with ``--rows`` soak rows (texts from
  ``bench.longmem.conversation_stream``, the row shape of a soak trace, one row per upsert as the
  capture path writes them), split by structure: numpy buffers by ``nbytes``, Python containers and
  their keys and values by ``sys.getsizeof`` (a value shared by two containers, such as a token
  held by two dicts, counted once). The lexical postings are split by attribute, whatever their
  layout, so the same script measures two versions of the code.
- **Vector channel**: over that table, a digest of every query's (slot, score) list with three
  masks (every row, a tenth, one session) and the exact scan's p50.
- **Query cost**: a ``Lexical`` over that many soak texts (bulk-loaded as a load does), each query
  (another turn's user text, analysed as retrieval does) timed as the best of ``--reps``. A digest of
  every query's (slot, score) list lets two versions be checked for identical results.

Run each version of the code in its own process (a ``git worktree`` per commit), alternated, and
note the load (``uptime``) beside the figures.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import sys
import time
from array import array
from typing import Any

import numpy as np

from bench.longmem import conversation_stream

DIM = 384


def soak_rows(n: int, seed: int = 22) -> list[dict[str, Any]]:
    """``n`` trace rows as the soak writes them (``bench/soak.py`` streams seed + 11)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, (sid, user, agent) in enumerate(conversation_stream(seed, n)):
        vec = rng.standard_normal(DIM).astype(np.float32)
        rows.append(
            {
                "id": f"tr_{i:012x}",
                "episode_id": f"ep_{i // 8:012x}",
                "session_id": sid,
                "ts": 1796207399702 + i,
                "user_text": user,
                "agent_text": agent,
                "summary": user,
                "tags": ["lightweight_memory", "python"],
                "priority": 0.5,
                "search_text": f"{user}\n{agent}\n{user}\nlightweight_memory python",
                "owner_agent_kind": "bench",
                "owner_profile_id": "default",
                "share_scope": "private",
                "vec_summary": vec / np.linalg.norm(vec),
            }
        )
    return rows


def _size(v: Any, seen: set[int]) -> int:
    if id(v) in seen:
        return 0
    seen.add(id(v))
    if isinstance(v, np.ndarray):
        return int(v.nbytes)
    return sys.getsizeof(v)


def attribute_bytes(obj: Any) -> dict[str, int]:
    """Each attribute of ``obj`` in bytes: a dict as its table, its keys and its values (each
    object counted once over all attributes); arrays, numbers and the rest as themselves."""
    seen: set[int] = set()
    out: dict[str, int] = {}
    for name, v in sorted(vars(obj).items()):
        if isinstance(v, dict):
            out[f"{name} (dict)"] = sys.getsizeof(v)
            out[f"{name} keys"] = sum(_size(k, seen) for k in v)
            out[f"{name} values"] = sum(_size(x, seen) for x in v.values())
        elif isinstance(v, np.ndarray | array | list | tuple):
            out[name] = _size(v, seen)
        elif callable(getattr(v, "nbytes", None)):  # a compact store (``lexical/singles.py``)
            out[name] = int(v.nbytes())
    return out


def postings_shape(lex: Any) -> dict[str, int]:
    """Tokens held and how many have exactly one posting (``df`` of each token)."""
    toks: set[str] = set(lex.tokens())
    dfs = [lex.df(t) for t in toks]
    return {"tokens": sum(d > 0 for d in dfs), "one_posting": sum(d == 1 for d in dfs)}


def measure_bytes(n: int, vector_dtype: str = "", reps: int = 7) -> dict[str, Any]:
    from stratamem.core.hotindex.footprint import table_bytes
    from stratamem.core.hotindex.lexical import analysis
    from stratamem.core.hotindex.table import HotTable

    rows = soak_rows(n)
    cfg = {"hot_vector_dtype": vector_dtype} if vector_dtype else {}
    t = HotTable("traces", ("vec_summary",), DIM, cfg)
    for r in rows:
        t.upsert([r])
    del rows
    gc.collect()
    parts = table_bytes(t)
    vectors = measure_vectors(t, reps)
    lex = attribute_bytes(t.lex)
    words: dict[str, Any] = getattr(analysis, "_WORD_TOKEN", {})
    return {
        "rows": n,
        "per_trace": {k: round(v / n, 1) for k, v in parts.items()},
        "total_per_trace": round(sum(parts.values()) / n, 1),
        "lexical_per_trace": {k: round(v / n, 1) for k, v in lex.items() if v},
        "lexical_total_per_trace": round(t.lex.nbytes() / n, 1),
        "shape": postings_shape(t.lex),
        # the analyser's word -> token cache: process-wide, outside the footprint, up to 500k words
        "word_cache": {"words": len(words), "dict_per_trace": round(sys.getsizeof(words) / n, 1)},
        "vectors": vectors,
    }


def measure_vectors(t: Any, reps: int, limit: int = 20) -> dict[str, Any]:
    """The vector channel over the table's rows: a digest of every (slot, score) list for
    queries near stored rows, with every row visible, a tenth of them (a sparse scan) and one
    session's (a few slots), and the exact scan's p50 (best of ``reps`` per query)."""
    rng = np.random.default_rng(9)
    n = t.n
    picks = rng.choice(n, size=min(n, 120), replace=False).tolist()
    queries = [t.unit_vector("vec_summary", s) + 0.05 * rng.standard_normal(DIM) for s in picks]
    queries = [(q / np.linalg.norm(q)).astype(np.float32) for q in queries]
    masks = {
        "all": t.alive[:n].copy(),
        "tenth": t.alive[:n] & (rng.random(n) < 0.1),
        "session": np.isin(np.arange(n), t.session_slots(str(t.rows[n // 2]["session_id"]))),
    }
    digest = hashlib.sha256()
    for q in queries:
        for m in masks.values():
            digest.update(repr(t.vector("vec_summary", q, m, limit)).encode())
    out: dict[str, Any] = {"digest": digest.hexdigest()[:16]}
    for name, m in masks.items():
        times = []
        for q in queries:
            best = float("inf")
            for _ in range(reps):
                t1 = time.perf_counter()
                t.vector("vec_summary", q, m, limit)
                best = min(best, time.perf_counter() - t1)
            times.append(best * 1000)
        out[f"{name}_p50_ms"] = round(float(np.median(times)), 4)
    return out


def measure_queries(n: int, reps: int, limit: int = 60) -> dict[str, Any]:
    from stratamem.core.hotindex.lexical import Lexical, query_tokens
    from stratamem.core.retrieval.query import compile_text

    stream = conversation_stream(22, n)
    texts = [f"{u}\n{a}\n{u}\nlightweight_memory python" for _s, u, a in stream]
    lex = Lexical()
    t0 = time.perf_counter()
    for start in range(0, n, 8192):
        lex.add_many(start, texts[start : start + 8192])
    index_s = time.perf_counter() - t0
    rng = np.random.default_rng(5)
    picks = rng.choice(n, size=min(n, 120), replace=False).tolist()
    queries = [query_tokens(compile_text(stream[i][1]).terms[:12], unique=False) for i in picks]
    queries = [q for q in queries if q]
    mask = np.ones(n, dtype=bool)
    digest = hashlib.sha256()
    for q in queries:  # also the warm-up (bound cache, score buffer)
        digest.update(repr(lex.bm25(q, mask, limit)).encode())
    times = []
    for q in queries:
        best = float("inf")
        for _ in range(reps):
            t1 = time.perf_counter()
            lex.bm25(q, mask, limit)
            best = min(best, time.perf_counter() - t1)
        times.append(best * 1000)
    return {
        "rows": n,
        "queries": len(queries),
        "index_s": round(index_s, 2),
        "bm25_p50_ms": round(float(np.median(times)), 4),
        "bm25_mean_ms": round(float(np.mean(times)), 4),
        "digest": digest.hexdigest()[:16],
        "load1": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.hot_bytes", description=__doc__)
    p.add_argument("--rows", type=int, default=10000, help="rows for the bytes (0: skip)")
    p.add_argument("--query-rows", default="", help="comma-separated row counts for BM25 timing")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--vector-dtype", default="", help="storage.hot_vector_dtype (default: shipped)")
    p.add_argument("--out", default="", help="also write the figures as JSON here")
    args = p.parse_args(argv)
    out: dict[str, Any] = {"load1_start": round(os.getloadavg()[0], 2)}
    if args.rows:
        out["bytes"] = measure_bytes(args.rows, args.vector_dtype, args.reps)
    out["queries"] = [
        measure_queries(int(r), args.reps) for r in args.query_rows.split(",") if r.strip()
    ]
    out["load1_end"] = round(os.getloadavg()[0], 2)
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
