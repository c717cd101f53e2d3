"""Candidates gathered by the channels: one per memory, with the rank it got in each channel."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: row key marking vectors that are already float32 unit vectors of the store's dimension
UNIT_VECTORS = "_unit_vectors"
TIER_OF = {"skill": 1, "trace": 2, "episode": 2, "experience": 2, "world_model": 3}


@dataclass(slots=True)
class Candidate:
    ref_kind: str
    ref_id: str
    row: dict[str, Any]
    tier: int = 2
    #: channel name -> (0-based rank in that channel, channel score)
    channels: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: unit vectors of the memory (for MMR redundancy and the semantic score)
    vectors: list[np.ndarray] = field(default_factory=list)
    #: best cosine to the query over ``vectors`` (None without an embedder)
    cosine: float | None = None
    #: tier boost (priority, η, salience …) added to the relevance
    boost: float = 0.0
    #: text searched for exact identifiers
    text: str = ""
    #: relevance fused by the tier itself (retrieval/fusion.py + expand.py); None -> rank fusion
    prior: float | None = None
    #: computes ``text`` from ``row`` when first asked (``search_text()``); most queries never ask
    text_of: Callable[[Mapping[str, Any]], str] | None = field(
        default=None, repr=False, compare=False
    )

    def search_text(self) -> str:
        """``text``, computed from the row on first use when the pool gave a ``text_of``."""
        if self.text_of is not None:
            self.text = self.text_of(self.row)
            self.text_of = None
        return self.text

    @property
    def key(self) -> str:
        return f"{self.ref_kind}:{self.ref_id}"


def trace_text(row: Mapping[str, Any]) -> str:
    """A trace's own words: what its lexical channel and its neighbours are matched on."""
    return "\n".join(
        str(row.get(k) or "") for k in ("user_text", "agent_text", "summary", "reflection")
    )


def search_text(row: Mapping[str, Any]) -> str:
    """A learned row's lexical text (its stored ``search_text``, else its trace words)."""
    return str(row.get("search_text") or trace_text(row))


def unit(vec: Any) -> np.ndarray | None:
    if vec is None:
        return None
    arr = np.asarray(vec, dtype=np.float32).reshape(-1)
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        return None
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else None


class Pool:
    """Candidates of one tier kind, merged by id across channels."""

    def __init__(self, ref_kind: str, vector_columns: Iterable[str], text_of: Any) -> None:
        self.ref_kind = ref_kind
        self.vector_columns = tuple(vector_columns)
        self.text_of = text_of
        self.items: dict[str, Candidate] = {}
        #: (query vector, candidate ids) of the last ``set_cosines``: an unchanged pool skips it
        self._cosines_for: tuple[int, tuple[str, ...]] | None = None

    def candidate(self, row: Mapping[str, Any]) -> Candidate:
        rid = str(row["id"])
        cand = self.items.get(rid)
        if cand is None:
            clean: dict[str, Any]
            if row.get(UNIT_VECTORS) and isinstance(row, dict):
                # the hot index's rows: vectors already unit, no extras, and the dict made for
                # this retrieval alone (``HotTable.full_row``): stripped in place, not copied
                clean = row
                vecs = [
                    v for v in (clean.pop(c, None) for c in self.vector_columns) if v is not None
                ]
                del clean[UNIT_VECTORS]
            else:
                vecs = [v for v in (unit(row.get(c)) for c in self.vector_columns) if v is not None]
                clean = {
                    k: v
                    for k, v in row.items()
                    if k not in self.vector_columns and not k.startswith("_")
                }
            cand = Candidate(
                ref_kind=self.ref_kind,
                ref_id=rid,
                row=clean,
                tier=TIER_OF[self.ref_kind],
                vectors=vecs,
                text_of=self.text_of,
            )
            self.items[rid] = cand
        return cand

    def add_channel(self, name: str, scored: Iterable[tuple[Mapping[str, Any], float]]) -> None:
        """Record a channel's ranked output (best first); a memory keeps its best rank per channel."""
        items = self.items
        for rank, (row, score) in enumerate(scored):
            cand = items.get(str(row["id"])) or self.candidate(row)
            got = cand.channels.get(name)
            if got is None or got[0] > rank:
                cand.channels[name] = (rank, float(score))

    def set_cosines(self, qvec: np.ndarray | None) -> None:
        """Each candidate's best cosine to the query: one matrix-vector product for the pool."""
        if qvec is None:
            return
        key = (id(qvec), tuple(self.items))
        if key == self._cosines_for:  # same query, same candidates: the cosines are current
            return
        self._cosines_for = key
        owners: list[Candidate] = []
        vecs: list[np.ndarray] = []
        shape = qvec.shape
        for cand in self.items.values():
            got = cand.vectors
            if got:
                cand.cosine = None
                for v in got:
                    if v.shape == shape:
                        owners.append(cand)
                        vecs.append(v)
        if not vecs:
            return
        sims = (rows_matrix(vecs) @ qvec).tolist()
        for cand, sim in zip(owners, sims, strict=True):
            if cand.cosine is None or sim > cand.cosine:
                cand.cosine = sim


def rows_matrix(vecs: list[np.ndarray]) -> np.ndarray:
    """``np.stack`` of equal-shape 1-D vectors (the same matrix, so the same products) in one C
    call: ``np.stack`` walks the list three times in Python (~8% of a query at 1k traces)."""
    return np.concatenate(vecs).reshape(len(vecs), -1)


def num(row: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    """A numeric column as float (missing or invalid → ``default``)."""
    v = row.get(key)
    try:
        return float(v) if v is not None else default
    except (TypeError, ValueError):
        return default


def priority_for(value: float, ts: int, now: int, half_life_days: float) -> float:
    """max(V, 0) · 0.5^(age_days / half-life) (memos-core §5.3)."""
    age_days = max(0.0, (now - ts) / 86_400_000)
    return float(max(0.0, value) * 0.5 ** (age_days / max(1.0, half_life_days)))
