"""Synthetic but realistic trace rows for the scaling runs, written straight into LanceDB.

Texts come from the conversation templates; vectors are mixtures of real MiniLM embeddings of a few
hundred anchor sentences plus noise, so they keep the cluster structure of real data while a 100k
store loads in seconds instead of running the embedder 100k times.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from bench.longmem import FILLER_TOPICS, FOODS, LANGS, PLACES, PREFERENCES, SINGLE, UPDATES

AGENT = "bench"


def bench_turn(ns: Any, session_id: str, text: str, ts: int | None = None) -> Any:
    """The bench agent's turn start for ``text`` (now, unless ``ts``): one shape for every timer."""
    import time

    from stratamem.contract.dtos import TurnInput

    when = int(time.time() * 1000) if ts is None else ts
    return TurnInput(agent=AGENT, session_id=session_id, user_text=text, ts=when, namespace=ns)


def bench_query(
    ns: Any, text: str, session_id: str | None = None, reason: str = "turn_start"
) -> Any:
    """The bench agent's retrieval query for ``text`` (a turn start's, unless ``reason``)."""
    from stratamem.contract.dtos import RetrievalQuery

    return RetrievalQuery(
        agent=AGENT, query=text, namespace=ns, session_id=session_id, reason=reason
    )


BASE_TS = 1_735_000_000_000


def anchor_texts(seed: int, n: int = 256) -> list[str]:
    """``n`` distinct sentences from the templates (facts, preferences, updates, filler)."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    topics = sorted(FILLER_TOPICS)
    while len(out) < n:
        r = rng.random()
        if r < 0.35:
            f = rng.choice(SINGLE)
            text = rng.choice(f.says).format(**f.values(rng))
        elif r < 0.45:
            _k, make, says, _asks = rng.choice(PREFERENCES)
            text = says.format(**make(rng))
        elif r < 0.55:
            _k, make, old, new, _asks, _ans = rng.choice(UPDATES)
            text = rng.choice((old, new)).format(**make(rng))
        else:
            u, a = rng.choice(FILLER_TOPICS[rng.choice(topics)])
            vals = {
                "food": rng.choice(FOODS),
                "lang": rng.choice(LANGS),
                "place": rng.choice(PLACES),
            }
            text = f"{u.format(**vals)} {a.format(**vals)}"
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def query_texts(seed: int, n: int) -> list[str]:
    """``n`` distinct memory questions (what a user asks at the start of a turn)."""
    rng = random.Random(seed + 1)
    out: list[str] = []
    seen: set[str] = set()
    topics = sorted(FILLER_TOPICS)
    while len(out) < n:
        r = rng.random()
        if r < 0.5:
            f = rng.choice(SINGLE)
            text = rng.choice(f.asks).format(**f.values(rng))
        elif r < 0.7:
            _k, make, _o, _n, asks, _a = rng.choice(UPDATES)
            text = rng.choice(asks).format(**make(rng))
        else:
            u, _a = rng.choice(FILLER_TOPICS[rng.choice(topics)])
            vals = {
                "food": rng.choice(FOODS),
                "lang": rng.choice(LANGS),
                "place": rng.choice(PLACES),
            }
            text = "Remind me what we said about this: " + u.format(**vals)
        text = f"{text} ({len(out)})" if text in seen else text
        seen.add(text)
        out.append(text)
    return out


@dataclass
class SyntheticCorpus:
    """Anchor sentences with their real embeddings; rows are drawn from them deterministically."""

    texts: list[str]
    vectors: np.ndarray  # (anchors, dim) unit rows
    seed: int

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def vectors_for(self, start: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit vectors, main anchor, second anchor) for rows ``start .. start+n`` (chunk-stable)."""
        rng = np.random.default_rng([self.seed, start])
        k = len(self.texts)
        # Zipf-like popularity: a few topics are talked about a lot
        weights = 1.0 / np.arange(1, k + 1) ** 0.8
        weights /= weights.sum()
        main = rng.choice(k, size=n, p=weights)
        second = rng.integers(0, k, size=n)
        noise = rng.standard_normal((n, self.dim)).astype(np.float32) / np.sqrt(self.dim)
        vec = self.vectors[main] + 0.45 * self.vectors[second] + 0.55 * noise
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        return vec.astype(np.float32), main, second

    def table(
        self, schema: pa.Schema, start: int, n: int, profile: str = "default"
    ) -> tuple[pa.Table, np.ndarray]:
        """An arrow table of ``n`` trace rows (schema of the store) and their vectors."""
        vec, main, second = self.vectors_for(start, n)
        idx = np.arange(start, start + n)
        user = [f"{self.texts[m]} [{i}]" for m, i in zip(main.tolist(), idx.tolist(), strict=True)]
        agent = [self.texts[s][:160] for s in second.tolist()]
        cols: dict[str, Any] = {
            "id": [f"syn-{i:07d}" for i in idx.tolist()],
            "episode_id": [f"ep-{i // 8:06d}" for i in idx.tolist()],
            "session_id": [f"se-{i // 40:06d}" for i in idx.tolist()],
            "ts": (BASE_TS + idx * 60_000).tolist(),
            "turn_id": (BASE_TS + idx * 60_000).tolist(),
            "user_text": user,
            "agent_text": agent,
            "summary": [u[:140] for u in user],
            "tool_calls_json": ["[]"] * n,
            "tags": [["lightweight"]] * n,
            "error_signatures": [[]] * n,
            "value": [0.0] * n,
            "alpha": [0.0] * n,
            "priority": [0.5] * n,
            "search_text": [f"{u}\n{a}" for u, a in zip(user, agent, strict=True)],
            "owner_agent_kind": [AGENT] * n,
            "owner_profile_id": [profile] * n,
            "share_scope": ["private"] * n,
        }
        arrays = []
        for f in schema:
            if f.name == "vec_summary":
                flat = pa.array(vec.reshape(-1), type=pa.float32())
                arrays.append(pa.FixedSizeListArray.from_arrays(flat, self.dim))
            elif f.name in cols:
                arrays.append(pa.array(cols[f.name], type=f.type))
            else:
                arrays.append(pa.nulls(n, type=f.type))
        return pa.Table.from_arrays(arrays, schema=schema), vec


def build_corpus(embedder: Any, seed: int, anchors: int = 256) -> SyntheticCorpus:
    texts = anchor_texts(seed, anchors)
    vecs = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    return SyntheticCorpus(texts, vecs, seed)


def chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(size, total - start)


async def load_store(
    store: Any, corpus: SyntheticCorpus, total: int, chunk: int = 25_000
) -> np.ndarray:
    """Append ``total`` rows to ``store``'s traces table; returns the (total, dim) vector matrix."""
    tbl = store.maintenance_table("traces", "bench.load")
    schema = await tbl.schema()
    mats = []
    for start, n in chunks(total, chunk):
        data, vec = corpus.table(schema, start, n)
        await tbl.add(data)
        mats.append(vec)
    return np.concatenate(mats) if mats else np.zeros((0, corpus.dim), dtype=np.float32)
