"""A query word the home lacks is embedded once: its vector is kept (vocab/lacking.py), the next
question holding it embeds the query alone, and ranks exactly as with the word embedded again."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_retrieval_vocab import ON, TRIP, _ingest, _ranked

from stratamem.core.embedding import load_embedder
from stratamem.core.engine.assemble import open_local_core

#: "states" is not a word of the home (test_retrieval_vocab: embedded with the query)
FIRST = "Which states did Ann visit?"
AGAIN = "Which states has Ann seen?"


class CountingEmbedder:
    """The shipped model, counting the batches it embeds (a host's own embedder would wrap it)."""

    def __init__(self) -> None:
        self.inner = load_embedder({"cache": {"enabled": False}})
        self.name, self.model, self.dimension = "counting", self.inner.model, self.inner.dimension
        self.batches: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return np.asarray(self.inner.embed_documents(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.inner.embed_query(text))


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("vocab-lacking-home")
    import asyncio

    asyncio.run(_ingest(home, **ON))
    return home


@pytest.fixture
def home(filled: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "home"
    shutil.copytree(filled, dst)
    return dst


async def _open(home: Path, emb: CountingEmbedder) -> Any:
    return await open_local_core(home, embedder=emb, **ON)


async def test_a_lacking_word_is_embedded_once_and_ranks_as_embedded_again(home: Path) -> None:
    emb = CountingEmbedder()
    core = await _open(home, emb)
    try:
        first = await _ranked(core, FIRST)
        assert [b for b in emb.batches if "states" in b[1:]]  # with the query
        emb.batches.clear()
        again = await _ranked(core, AGAIN)
        # the old code embedded [AGAIN, "states"] again
        assert not [b for b in emb.batches if "states" in b]
        assert core.services.vocab.lacking.hits >= 1
    finally:
        await core.shutdown()
    fresh_emb = CountingEmbedder()
    fresh = await _open(home, fresh_emb)
    try:
        embedded_again = await _ranked(fresh, AGAIN)
        assert [b for b in fresh_emb.batches if "states" in b[1:]]
    finally:
        await fresh.shutdown()
    assert first and TRIP in first[0][0]
    assert again == embedded_again
