"""The hot lexical channel's pruned BM25 top-k (MaxScore) side by side with the exhaustive scorer it
equals, over the same postings in one process: the scaling corpus's texts and LoCoMo turns.

    python -m bench.lexical_prune --rows 30000,300000,1000000 --out bench/results/lexical-prune.md

Each query is timed as the best of a few repeats (a loaded machine inflates single timings);
every query's pruned list is checked equal to the exhaustive one (ids and scores).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.corpus import anchor_texts, query_texts
from bench.locomo import default_data_path


def synthetic(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """The scaling corpus's ``search_text`` for ``n`` rows (``SyntheticCorpus.table``) and its
    questions: a few hundred template sentences, Zipf-like, each row numbered."""
    texts = anchor_texts(seed, 256)
    rng = np.random.default_rng([seed, 0])
    w = 1.0 / np.arange(1, 257) ** 0.8
    main = rng.choice(256, size=n, p=w / w.sum())
    second = rng.integers(0, 256, size=n)
    docs = [
        f"{texts[m]} [{i}]\n{texts[s][:160]}"
        for i, (m, s) in enumerate(zip(main.tolist(), second.tolist(), strict=True))
    ]
    return docs, query_texts(seed, 43)


def locomo(n: int) -> tuple[list[str], list[str]] | None:
    """LoCoMo's dialogue turns repeated (numbered) to ``n`` rows, and its questions."""
    path = default_data_path(Path(__file__).resolve().parents[1])
    if path is None:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for conv in data:
        for v in conv["conversation"].values():
            if isinstance(v, list):
                turns += [f"{t.get('speaker')}: {t.get('text')}" for t in v]
        questions += [q["question"] for q in conv["qa"]]
    return [f"{turns[i % len(turns)]} [{i}]" for i in range(n)], questions[:120]


def _best(fn: Callable[[], object], reps: int) -> float:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out) * 1000


def measure(docs: list[str], questions: list[str], limit: int, reps: int) -> dict[str, float]:
    from stratamem.core.hotindex.lexical import Lexical, query_tokens
    from stratamem.core.retrieval.query import compile_text

    lex = Lexical()
    t0 = time.perf_counter()
    for start in range(0, len(docs), 8192):  # as a load hands them over
        lex.add_many(start, docs[start : start + 8192])
    index_s = time.perf_counter() - t0
    mask = np.ones(len(docs), dtype=bool)
    toks = [query_tokens(compile_text(q).terms[:12], unique=False) for q in questions]
    toks = [t for t in toks if t]
    # (also the warm-up: first calls fill the bound cache and the score buffer)
    same = all(lex.bm25(t, mask, limit) == lex.bm25_exhaustive(t, mask, limit) for t in toks)
    pruned = [_best(lambda t=t: lex.bm25(t, mask, limit), reps) for t in toks]
    full = [_best(lambda t=t: lex.bm25_exhaustive(t, mask, limit), reps) for t in toks]
    return {
        "queries": len(toks),
        "index_s": round(index_s, 2),
        "pruned_p50_ms": round(float(np.median(pruned)), 3),
        "exhaustive_p50_ms": round(float(np.median(full)), 3),
        "ratio_sum": round(sum(pruned) / max(sum(full), 1e-9), 2),
        "identical": float(same),
        "load1": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.lexical_prune", description=__doc__)
    p.add_argument("--rows", default="30000,300000")
    p.add_argument("--limit", type=int, default=60)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    lines = [
        "# Hot lexical channel: pruned (MaxScore) vs exhaustive BM25 top-k, side by side",
        "",
        f"`python -m bench.lexical_prune --rows {args.rows}`, top {args.limit}, each query the best"
        f" of {args.reps}; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} at start."
        " `ratio` = pruned / exhaustive summed over the queries; `identical` = every pruned list"
        " equal to the exhaustive one (ids and scores).",
        "",
        "| corpus | rows | queries | pruned p50 | exhaustive p50 | ratio | identical | postings"
        " built | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in (int(x) for x in args.rows.split(",") if x):
        for name, got in (("synthetic (bench)", synthetic(n)), ("LoCoMo turns", locomo(n))):
            if got is None:
                continue
            r = measure(got[0], got[1], args.limit, args.reps)
            lines.append(
                f"| {name} | {n:,} | {r['queries']:.0f} | {r['pruned_p50_ms']} ms |"
                f" {r['exhaustive_p50_ms']} ms | {r['ratio_sum']}× |"
                f" {'yes' if r['identical'] else 'NO'} | {r['index_s']} s | {r['load1']} |"
            )
            print(lines[-1], flush=True)
    lines += ["", f"Load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}."]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
