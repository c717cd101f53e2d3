"""The word store of query expansion at an agent home's size (``python -m bench.vocab_store``).

A 100k-memory home holds ~40k distinct words (Heaps' law from LoCoMo's 1.7k words per 300
memories; bench/results/locomo.md, session 6). Random unit vectors stand in for the words'
MiniLM vectors (the cost does not depend on what they mean), Zipf counts for their memories.
Reports: the cost of adding a word once the store is large (its list and its entry into the
lists it beats), the query side's lookup and filters for five query words, load time from disk,
and bytes per word (arrays and Python structures, tracemalloc).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from stratamem.contract.dtos import Namespace
from stratamem.core.storage.ownership import Scope
from stratamem.core.vocab.expand import ExpandParams, expand
from stratamem.core.vocab.store import WordStore
from stratamem.core.vocab.words import token_of


def _words(n: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for i in range(n):
        w, k = "", i
        while True:
            w += letters[k % 26]
            k //= 26
            if not k:
                break
        out.append("q" + w + "zz")  # letters only, never a stop word
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=40_000)
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    words = _words(args.words + 64)
    vecs = rng.standard_normal((len(words), args.dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    out: dict[str, object] = {"words": args.words, "memories": args.memories, "dim": args.dim}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "vocab"
        for w in words:  # the capture path analysed them already (lexical's caches, not the store)
            token_of(w)
        tracemalloc.start()
        st = WordStore(folder, args.dim)
        t0 = time.perf_counter()
        for a in range(0, args.words, 1024):
            st.add(words[a : min(a + 1024, args.words)], vecs[a : min(a + 1024, args.words)])
        out["build_s"] = round(time.perf_counter() - t0, 1)
        zipf = np.minimum(rng.zipf(1.3, args.words), args.memories)
        owner = st.counts.of(("bench", "default", "private"))
        owner.df = {f"{w}": int(c) for w, c in zip(words[: args.words], zipf, strict=True)}
        owner.memories = args.memories
        counts = st.visible(Scope.visible(Namespace("bench", "default")))
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        out["bytes_per_word"] = round(held / args.words)
        out["array_bytes_per_word"] = round(st.nbytes() / args.words)
        times = []
        for i in range(64):  # one new word at a time, as a capture brings it
            t0 = time.perf_counter()
            st.add([words[args.words + i]], vecs[args.words + i : args.words + i + 1])
            times.append((time.perf_counter() - t0) * 1000)
        out["add_one_word_ms_p50"] = round(statistics.median(times), 2)
        p = ExpandParams(min_cosine=0.1, min_query_cosine=-1.0)  # random vectors: let words in
        look = []
        for _ in range(200):
            qwords = [words[int(j)] for j in rng.integers(0, args.words, 5)]
            q = vecs[rng.integers(0, args.words)]
            t0 = time.perf_counter()
            expand(st, counts, qwords, q, p)
            look.append((time.perf_counter() - t0) * 1000)
        out["expand_5_words_ms_p50"] = round(statistics.median(look), 3)
        out["expand_5_words_ms_p95"] = round(float(np.percentile(look, 95)), 3)
        t0 = time.perf_counter()
        lacking = expand(st, counts, ["qmissingzz"], vecs[0], p, {"qmissingzz": vecs[-1]})
        out["a_word_the_home_lacks_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        out["lacking_added"] = len(lacking.words)
        st.save()
        out["disk_bytes_per_word"] = round(
            sum(f.stat().st_size for f in folder.iterdir()) / len(st)
        )
        t0 = time.perf_counter()
        WordStore.load(folder, args.dim)
        out["load_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
