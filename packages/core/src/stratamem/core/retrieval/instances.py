"""Answer-side novelty in the final pick: a candidate naming an *instance* (a proper name or a
title) that no picked memory names yet gains in the pick.

A question asking for a set ("What cities has John been to?", "What video games does Nate play?")
is answered by turns that each name one member ("I was in Chicago", "Valorant"). Those turns
often hold none of the query's words, so query-side aspects (retrieval/coverage.py) and the
expansion cannot tell them from their session's other turns; what sets them apart is the member
they name. An instance is read from a text's form, not from a word list: a word that begins with
a capital letter where a sentence does not begin (not first on its line, not after ``.``, ``!``,
``?``, ``:`` or ``;``), so "I was in Chicago" names "chicago" and "Chicago was great" does not.
Its index token counts only when the query does not hold it and at most ``max_share`` of the
memories the caller may see hold it: the speakers' and the user's own names are in most of a
home's memories (the same counts the BM25 idf reads), an instance is rare.

In the final pick a candidate among the ``top`` most relevant gains κ when it names an instance
that no chosen memory names (an instance a chosen memory names keeps ``decay`` of its weight:
0 counts only new ones, 1 every instance alike). Like the coverage gain it decides which traces
make the list, not their order in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stratamem.core.hotindex.lexical import analyze, query_tokens
from stratamem.core.retrieval import query_shape
from stratamem.core.retrieval.candidates import Candidate, search_text
from stratamem.core.retrieval.hot_tiers import FTS_TERMS

if TYPE_CHECKING:
    from stratamem.core.retrieval.engine import _Run

#: a candidate -> the index tokens of the instances it names
InstancesOf = Callable[[Candidate], frozenset[str]]

#: a word of letters (apostrophes and hyphens inside), and the text before it on its line
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.U)
#: what ends a sentence or a clause that a capital may start
_STOPS = (".", "!", "?", ":", ";")
#: the first person pronoun and its contractions are capitalised anywhere
_FIRST_PERSON = re.compile(r"^I(?:['’](?:m|ve|ll|d))?$")


def instance_words(text: str) -> list[str]:
    """The words of ``text`` that begin with a capital letter where no sentence begins."""
    out: list[str] = []
    for line in (text or "").splitlines():
        for m in _WORD.finditer(line):
            word = m.group()
            if not word[0].isupper() or _FIRST_PERSON.match(word):
                continue
            before = line[: m.start()].rstrip()
            if not before or before.endswith(_STOPS):
                continue
            out.append(word)
    return out


def instances_of(
    query: frozenset[str], df: Callable[[str], int], docs: int, max_share: float
) -> InstancesOf:
    """A candidate's instances: the index tokens of its ``instance_words`` that the query does
    not hold and that at most ``max_share`` of the ``docs`` memories hold (``df``: how many)."""
    limit = max_share * docs
    keep: dict[str, bool] = {}

    def rare(tok: str) -> bool:
        got = keep.get(tok)
        if got is None:
            got = keep[tok] = tok not in query and 0 < df(tok) <= limit
        return got

    def of(cand: Candidate) -> frozenset[str]:
        words = instance_words(search_text(cand.row) or cand.search_text())
        return frozenset(tok for tok in analyze(" ".join(words)) if rare(tok))

    return of


class Novelty:
    """The pick's instance state: each instance's weight still open (× κ) and which of the first
    ``top`` candidates names which instance."""

    def __init__(
        self, cands: Sequence[Candidate], of: InstancesOf, kappa: float, top: int, decay: float
    ) -> None:
        self.cands = cands
        self.of = of
        self.decay = decay
        self.col: dict[str, int] = {}
        named = [of(c) for c in cands[:top]]
        for toks in named:
            for tok in toks:
                self.col.setdefault(tok, len(self.col))
        self.held = np.zeros((len(named), len(self.col)), dtype=np.float64)
        for i, toks in enumerate(named):
            for tok in toks:
                self.held[i, self.col[tok]] = 1.0
        self.open = np.full(len(self.col), kappa, dtype=np.float64)

    def gains(self) -> np.ndarray:
        """Every candidate's gain now: the best open weight of an instance it names."""
        out = np.zeros(len(self.cands), dtype=np.float64)
        if self.col:
            out[: len(self.held)] = (self.held * self.open).max(axis=1)
        return out

    def chose(self, i: int) -> None:
        if i < len(self.held):
            row = self.held[i] > 0
        else:  # picked from past the gain's reach: what it names still counts as named
            toks = self.of(self.cands[i])
            row = np.zeros(len(self.col), dtype=bool)
            for tok in toks:
                j = self.col.get(tok)
                if j is not None:
                    row[j] = True
        self.open[row] *= self.decay


def for_pick(
    cands: Sequence[Candidate], of: InstancesOf | None, kappa: float, top: int, decay: float
) -> Novelty | None:
    """The instance state over ``cands`` in the pick's order (best relevance first); None when off."""
    if kappa <= 0 or of is None or not cands or top <= 0:
        return None
    return Novelty(cands, of, kappa, top, decay)


def pick_settings(run: _Run, set_query: bool) -> dict[str, Any]:
    """``RankParams``' instance fields for a retrieval, gated on the query's shape
    (``instance_novelty_gate``). The share of memories holding a token comes from the word
    store's counts over the caller's memories when the expansion read them, else from the hot
    index's postings over the rows the caller may see; without either the term is off (the
    speakers' names could not be told from instances)."""
    kappa = query_shape.gated(
        float(run.s("instance_novelty")), str(run.s("instance_novelty_gate")), set_query
    )
    if kappa <= 0:
        return {}
    counts = run.vocab_counts
    df: Callable[[str], int] | None = None
    docs = 0
    if counts is not None and int(counts.memories) > 0:
        df, docs = counts.df, int(counts.memories)
    else:
        hot = run.hot_table("traces")
        if hot is not None:
            from stratamem.core.retrieval.hot_channels import visible_df

            df, docs = visible_df(hot)
    if df is None or docs <= 0:
        return {}
    query = frozenset(query_tokens(run.cq.terms[:FTS_TERMS]))
    return {
        "instances_of": instances_of(query, df, docs, float(run.s("instance_novelty_max_share"))),
        "instance_weight": kappa,
        "instance_top": int(run.s("instance_novelty_top")),
        "instance_decay": float(run.s("instance_novelty_decay")),
    }
