"""The query expansion's steps inside a retrieval (vocab/expand.py does the expanding): the
query's words to widen, their vectors when the home lacks them, the added words.

Each step is a named stage of the retrieval's deadline ledger (``vocab``, ``embed``,
``expand``): a failure there is logged as ``retrieval.stage_failed`` and the recall goes on with
the un-expanded query. Outside every stage, an exception in ``expand`` once emptied a whole
``turn_start``, with no failed stage logged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from stratamem.contract.dtos import Namespace
from stratamem.core.hotindex.lexical import analyze
from stratamem.core.retrieval import hot_tiers
from stratamem.core.retrieval.candidates import unit
from stratamem.core.storage.ownership import Scope
from stratamem.core.vocab.expand import Expansion, expand, missing, params_of, query_words
from stratamem.core.vocab.lacking import LackingVectors
from stratamem.core.vocab.service import embed_with_query

if TYPE_CHECKING:
    from stratamem.core.retrieval.engine import _Run

#: the retrieval settings of the query expansion (vocab/expand.py: ``params_of``)
EXPAND_KEYS = (
    "expand_vocab_neighbours",
    "expand_vocab_min_cosine",
    "expand_vocab_weight",
    "expand_vocab_max_share",
    "expand_vocab_min_query_cosine",
    "dense_common_word_share",
)


async def query_words_of(run: _Run) -> tuple[list[str], list[str]] | None:
    """The query's words to widen with the home's vocabulary and, of those, the ones the home
    lacks; None when the switch is off, the store is not ready or the step fails."""
    vocab = run.ctx.vocab
    if vocab is None or not bool(run.s("expand_vocab")) or 2 not in run.plan.tiers:
        return None
    st = await run.dl.run("vocab", vocab.for_query)
    if st is None:
        return None

    def words() -> tuple[list[str], list[str]] | None:
        counts = st.visible(Scope.visible(run.ctx.namespace or Namespace()))
        params = params_of({k: run.s(k) for k in EXPAND_KEYS})
        got = query_words(counts, run.cq.terms[: hot_tiers.FTS_TERMS], params)
        if not got:
            return None
        run.vocab_store, run.vocab_counts, run.expand_params = st, counts, params
        return got, missing(st, got)

    return run.dl.call("expand", words)


async def embed_with_words(
    embedder: Any, text: str, words: list[str], kept: LackingVectors | None = None
) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
    """The query's unit vector and the vectors of the ``words`` the home lacks, from one model
    call (a batch of the wrong length fails the ``embed`` stage: the query is embedded alone).
    Words in ``kept`` are not embedded again; with all of them there, no batch is made and the
    query vector is None (the caller embeds the query alone)."""
    known = kept.known(words) if kept is not None else {}
    need = [w for w in words if w not in known]
    if not need:
        return None, known
    vec, mat = await embed_with_query(embedder, text, need)
    fresh = dict(zip(need, mat, strict=True))
    if kept is not None:
        kept.keep(fresh)
    return unit(vec), {**known, **fresh}


def expand_query(run: _Run, words: list[str]) -> None:
    """The added words (vocab/expand.py) into the run's ``cq.expansion``; unchanged when the
    ``expand`` stage fails."""

    store = run.vocab_store
    if store is None:
        return

    def added() -> Expansion:
        toks = analyze(" ".join(run.cq.terms[: hot_tiers.FTS_TERMS]))
        return expand(
            store,
            run.vocab_counts,
            words,
            run.qvec,
            run.expand_params,
            run.lacking,
            toks,
        )

    got = run.dl.call("expand", added)
    if got is not None:
        run.cq = replace(run.cq, expansion=got.words)
