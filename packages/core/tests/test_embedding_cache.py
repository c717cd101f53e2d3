"""The LRU embedding cache: keyed on provider|model|role|text, embeds only the misses, in one batch."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from stub_server import StubOpenAIServer

from stratamem.core.embedding import CachedEmbedder, Vectors, cache_key, embedder_factories
from stratamem.core.embedding.remote import OpenAICompatibleEmbedder


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer(embedding_dim=8) as s:
        yield s


def cached(server: StubOpenAIServer, max_items: int = 100) -> CachedEmbedder:
    return CachedEmbedder(
        OpenAICompatibleEmbedder(server.url, "m", timeout_s=2.0), max_items=max_items
    )


def test_only_misses_are_embedded_in_one_batch(server: StubOpenAIServer) -> None:
    emb = cached(server)
    first = emb.embed_documents(["a", "b"])
    mixed = emb.embed_documents(["b", "c", "a", "d", "c"])
    inputs = [r.json["input"] for r in server.calls("embeddings")]
    assert inputs == [["a", "b"], ["c", "d"]]
    np.testing.assert_array_equal(mixed[0], first[1])
    np.testing.assert_array_equal(mixed[2], first[0])
    np.testing.assert_array_equal(mixed[1], mixed[4])


def test_lru_evicts_the_least_recently_used(server: StubOpenAIServer) -> None:
    emb = cached(server, max_items=2)
    emb.embed_documents(["a", "b"])
    emb.embed_documents(["a"])  # a is now the most recent
    emb.embed_documents(["c"])  # evicts b
    assert len(emb) == 2
    emb.embed_documents(["a"])
    emb.embed_documents(["b"])
    inputs = [r.json["input"] for r in server.calls("embeddings")]
    assert inputs == [["a", "b"], ["c"], ["b"]]


def test_query_and_document_roles_are_cached_apart(server: StubOpenAIServer) -> None:
    emb = cached(server)
    emb.embed_documents(["x"])
    emb.embed_query("x")
    emb.embed_query("x")
    assert len(server.calls("embeddings")) == 2
    assert cache_key("p", "m", "query", "x") != cache_key("p", "m", "document", "x")
    assert cache_key("p", "m1", "query", "x") != cache_key("p", "m2", "query", "x")


def test_callers_cannot_corrupt_cached_rows(server: StubOpenAIServer) -> None:
    emb = cached(server)
    row = emb.embed_query("x")
    row[:] = 0
    assert float(np.linalg.norm(emb.embed_query("x"))) == pytest.approx(1.0, abs=1e-6)


class _Counting:
    name = "counting"
    model = "c1"
    dimension = 3

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.seen.extend(texts)
        return np.ones((len(texts), 3), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        self.seen.append(text)
        return np.ones(3, dtype=np.float32)


def test_empty_input_calls_nothing() -> None:
    inner = _Counting()
    out = CachedEmbedder(inner).embed_documents([])
    assert out.shape == (0, 3) and inner.seen == []


def test_builtins_register_through_the_plugin_hook() -> None:
    assert {"local", "openai_compatible"} <= set(embedder_factories())
