"""Three-tier retrieval (memos-core §5.7) with Stratamem's fixes: BM25 lexical channels with stop words
removed, every row searched, the whole turn embedded, channels fused by rank.

Stable interface (called by ``LocalCore``):

* ``await retrieve(ctx: RetrievalContext) -> RetrievalResult`` — ``ctx`` carries the
  ``RetrievalQuery`` (reason, text, ``top_k``, ``context_hints`` incl. ``visibleContextKnown`` /
  ``visibleContextStartTs`` / ``visibleContextUserTexts``), the namespace, open LanceDB
  ``AsyncTable``s by name (``traces``, ``policies``, ``world_models``, ``skills``; any may be None),
  ``pending_traces`` (acknowledged rows not yet in LanceDB, searched in memory), an ``embedder``
  with ``embed_query(text)`` (sync or async; None → lexical channels only), the config mapping,
  ``lightweight``, an absolute ``deadline`` (``time.monotonic()`` seconds) and optional ``tiers``.
  Past the deadline no new LanceDB or embedding call starts; the result is a safe cut-off of what
  was ranked so far (``cut_off=True``).
* ``await retrieve(core=…, query=…, namespace=…, pending=…, config=…)`` — the same, built from a
  ``LocalCore`` (``core.store.scoped(name, Scope.visible(ns))``, ``core.embed_query``,
  ``core.lightweight``). Every LanceDB table retrieval reads is a ``storage.scoped.ScopedTable``.
* Pure parts: ``rank(candidates, RankParams)``, ``render_packet(reason, snippets, prefer, avoid)``,
  ``compile_query(query)``.
"""

from stratamem.core.retrieval.engine import RetrievalContext, retrieve
from stratamem.core.retrieval.query import CompiledQuery, compile_query
from stratamem.core.retrieval.rank import Ranked, RankParams, rank
from stratamem.core.retrieval.render import Snippet, render_packet

__all__ = [
    "CompiledQuery",
    "RankParams",
    "Ranked",
    "RetrievalContext",
    "Snippet",
    "compile_query",
    "rank",
    "render_packet",
    "retrieve",
]
