"""An embedder that embeds a query and a stored text differently (E5's ``query: `` / ``passage: ``)
marks itself ``asymmetric``: a query holding a word the home lacks is then embedded as a query and
the word as a document. Before, the two went out in one ``embed_documents`` batch: the query got
the document side's vector."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from test_retrieval_vocab import ON, TRIP, _ingest, _ranked

from stratamem.core.embedding import CachedEmbedder, load_embedder
from stratamem.core.engine.assemble import open_local_core

#: "states" is not a word of the home (test_retrieval_vocab: embedded with the query)
QUERY = "Which states did Ann visit?"


class RoleEmbedder:
    """The shipped model, recording which texts it embeds in which role."""

    def __init__(self, asymmetric: bool) -> None:
        self.inner = load_embedder({"cache": {"enabled": False}})
        self.name, self.model, self.dimension = "roles", self.inner.model, self.inner.dimension
        self.asymmetric = asymmetric
        self.queries: list[str] = []
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents.extend(texts)
        return np.asarray(self.inner.embed_documents(texts))

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return np.asarray(self.inner.embed_query(text))


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("asymmetric-home")
    import asyncio

    asyncio.run(_ingest(home, **ON))
    return home


@pytest.fixture
def home(filled: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "home"
    shutil.copytree(filled, dst)
    return dst


def _asked(texts: list[str]) -> bool:
    """Whether the question is among ``texts`` (embedded without "Ann": retrieval/dense_query.py)."""
    return any(t.startswith("Which states did") for t in texts)


async def _ask(home: Path, emb: RoleEmbedder) -> list[tuple[str, float]]:
    core = await open_local_core(home, embedder=emb, **ON)
    try:
        return await _ranked(core, QUERY)
    finally:
        await core.shutdown()


async def test_an_asymmetric_embedders_query_is_embedded_as_a_query(home: Path) -> None:
    emb = RoleEmbedder(asymmetric=True)
    got = await _ask(home, emb)
    assert _asked(emb.queries)
    assert not _asked(emb.documents)  # the old code: [query, "states"] as documents
    assert "states" in emb.documents  # the lacking word, in the word store's role
    assert got and TRIP in got[0][0]


async def test_a_symmetric_embedder_keeps_the_one_batch(home: Path) -> None:
    emb = RoleEmbedder(asymmetric=False)
    await _ask(home, emb)
    assert _asked(emb.documents) and "states" in emb.documents
    assert not _asked(emb.queries)


def test_the_cache_says_what_the_embedder_it_wraps_says() -> None:
    assert CachedEmbedder(RoleEmbedder(asymmetric=True)).asymmetric is True  # type: ignore[arg-type]
    assert CachedEmbedder(load_embedder({"cache": {"enabled": False}})).asymmetric is False
