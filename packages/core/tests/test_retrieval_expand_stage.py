"""A failure in the query expansion is a named stage of the retrieval's deadline ledger: logged as
``retrieval.stage_failed`` (stage ``expand``), the recall goes on with the un-expanded query. The
expansion once ran outside every stage, and an exception there emptied the whole ``turn_start``
with no failed stage logged.

The failure is real: a third-party embedder (a plugin's, not ours) whose query vectors are shorter
than its document vectors, as a remote model does when a ``dimensions`` option reaches its query
calls only. Every channel already tolerates a query vector of another length (the dense channels
find nothing, BM25 still finds the memories); the expansion's cosine with the query did not."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from capture_support import capture_texts

from stratamem.contract.dtos import Namespace, TurnInput
from stratamem.core.engine.assemble import open_local_core

NS = Namespace("chat", "ann")
T0 = 1_700_000_000_000
TALK = [
    "Ann: I played on my Xbox until midnight.",
    "Ann: The controller of the Xbox needs new batteries.",
    "Ann: I spent the afternoon painting the garden fence.",
    "Ann: My sister plays the violin in an orchestra.",
    "Ann: We baked bread and played cards all evening.",
    "Ann: The station was closed because of the storm.",
]
#: every word of it is held by the memories: the query is embedded alone (``embed_query``)
QUESTION = "Ann played on the Xbox"


class ShortQueryEmbedder:
    """Bag-of-letters vectors; queries cut to half their length (a misconfigured plugin)."""

    name = "letters"
    model = "letters-26"
    dimension = 26

    @staticmethod
    def _one(text: str) -> np.ndarray:
        v = np.zeros(26, dtype=np.float32)
        for ch in text.lower():
            if "a" <= ch <= "z":
                v[ord(ch) - 97] += 1
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 26), dtype=np.float32)
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)[:13]


async def _core(home: Path, **overrides: Any) -> Any:
    return await open_local_core(home, embedder=ShortQueryEmbedder(), **overrides)


@pytest.mark.parametrize("hot", [True, False], ids=["hot", "lancedb"])
async def test_a_failing_expansion_is_logged_and_the_recall_keeps_its_hits(
    tmp_path: Path, hot: bool, caplog: pytest.LogCaptureFixture
) -> None:
    core = await _core(tmp_path, storage__hot_index=hot)
    try:
        await capture_texts(core, TALK, NS, T0)
        st = await core.services.vocab.store()
        assert "xbox" in st.index and "played" in st.index  # the expansion has words to widen
        with caplog.at_level(logging.WARNING, logger="stratamem"):
            res = await core.turn_start(
                TurnInput(
                    agent="chat",
                    session_id="s2",
                    user_text=QUESTION,
                    ts=T0 + 3_600_000,
                    namespace=NS,
                )
            )
    finally:
        await core.shutdown()
    assert any("Xbox" in h.snippet for h in res.hits)
    failed = [r.getMessage() for r in caplog.records if "retrieval.stage_failed" in r.getMessage()]
    assert any("expand" in m for m in failed), failed
    assert not [r for r in caplog.records if "retrieval.failed" in r.getMessage()]
