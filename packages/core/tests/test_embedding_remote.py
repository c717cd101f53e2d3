"""The OpenAI-compatible HTTP embedder against a real loopback HTTP stub server."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from stub_server import StubAnswer, StubOpenAIServer, fake_vector

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.embedding import load_embedder
from stratamem.core.embedding.remote import OpenAICompatibleEmbedder


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer(embedding_dim=12) as s:
        yield s


def make(server: StubOpenAIServer, **kw: object) -> OpenAICompatibleEmbedder:
    args: dict[str, object] = {
        "api_key": "sk-test-123",
        "timeout_s": 2.0,
        "max_retries": 2,
        "base_backoff_s": 0.01,
    }
    args.update(kw)
    return OpenAICompatibleEmbedder(server.url, "text-embed-stub", **args)  # type: ignore[arg-type]


def test_vectors_come_back_normalised_in_input_order_with_the_servers_dimension(
    server: StubOpenAIServer,
) -> None:
    emb = make(server)
    rows = emb.embed_documents(["alpha", "beta", "gamma"])
    assert rows.shape == (3, 12) and rows.dtype == np.float32
    expected = np.asarray(fake_vector("beta", 12), dtype=np.float32)
    np.testing.assert_allclose(rows[1], expected / np.linalg.norm(expected), atol=1e-6)
    assert emb.dimension == 12
    req = server.calls("embeddings")[0]
    assert req.path == "/v1/embeddings"
    assert req.headers["Authorization"] == "Bearer sk-test-123"
    assert req.json["model"] == "text-embed-stub" and req.json["input"] == [
        "alpha",
        "beta",
        "gamma",
    ]


def test_shuffled_indexes_are_put_back_in_order(server: StubOpenAIServer) -> None:
    data = [{"index": 1, "embedding": [0.0, 2.0]}, {"index": 0, "embedding": [3.0, 0.0]}]
    server.push("embeddings", StubAnswer(body={"data": data}))
    rows = make(server).embed_documents(["x", "y"])
    np.testing.assert_allclose(rows, [[1.0, 0.0], [0.0, 1.0]])


def test_dimension_is_probed_from_the_server_when_asked_first(server: StubOpenAIServer) -> None:
    emb = make(server)
    assert emb.dimension == 12
    assert len(server.calls("embeddings")) == 1


def test_batches_are_split_at_batch_size(server: StubOpenAIServer) -> None:
    make(server, batch_size=4).embed_documents([f"t{i}" for i in range(10)])
    sizes = [len(r.json["input"]) for r in server.calls("embeddings")]
    assert sizes == [4, 4, 2]


def test_429_then_success_is_retried(server: StubOpenAIServer) -> None:
    server.push("embeddings", StubAnswer(status=429), StubAnswer(status=503))
    rows = make(server).embed_documents(["a"])
    assert rows.shape == (1, 12)
    assert len(server.calls("embeddings")) == 3


def test_retries_are_bounded_then_embedding_unavailable(server: StubOpenAIServer) -> None:
    server.push("embeddings", *[StubAnswer(status=500)] * 5)
    with pytest.raises(StratamemError) as exc:
        make(server, max_retries=2).embed_query("a")
    assert exc.value.code == ErrorCode.EMBEDDING_UNAVAILABLE
    assert len(server.calls("embeddings")) == 3  # first try + 2 retries


def test_401_is_not_retried(server: StubOpenAIServer) -> None:
    server.push("embeddings", StubAnswer(status=401))
    with pytest.raises(StratamemError) as exc:
        make(server).embed_query("a")
    assert exc.value.code == ErrorCode.EMBEDDING_UNAVAILABLE and exc.value.details["status"] == 401
    assert len(server.calls("embeddings")) == 1


def test_slow_server_times_out_within_the_bound(server: StubOpenAIServer) -> None:
    import time

    server.push("embeddings", StubAnswer(delay_s=60.0), StubAnswer(delay_s=60.0))
    t0 = time.monotonic()
    with pytest.raises(StratamemError) as exc:
        make(server, timeout_s=0.3, max_retries=1).embed_query("a")
    assert exc.value.code == ErrorCode.EMBEDDING_UNAVAILABLE
    assert time.monotonic() - t0 < 10  # generous: two 0.3 s attempts, not the 60 s answers


def test_malformed_answer_and_wrong_dimension_are_typed_errors(server: StubOpenAIServer) -> None:
    server.push("embeddings", StubAnswer(body={"nope": 1}))
    with pytest.raises(StratamemError) as exc:
        make(server).embed_query("a")
    assert exc.value.code == ErrorCode.EMBEDDING_UNAVAILABLE
    emb = make(server, dimension=12)
    server.push("embeddings", StubAnswer(body={"data": [{"index": 0, "embedding": [1.0, 2.0]}]}))
    with pytest.raises(StratamemError) as exc2:
        emb.embed_query("a")
    assert exc2.value.code == ErrorCode.EMBEDDING_DIMENSION_MISMATCH


def test_unreachable_endpoint_is_embedding_unavailable() -> None:
    emb = OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "m", timeout_s=0.5, max_retries=0)
    with pytest.raises(StratamemError) as exc:
        emb.embed_query("a")
    assert exc.value.code == ErrorCode.EMBEDDING_UNAVAILABLE


def test_loaded_from_config_with_cache(server: StubOpenAIServer) -> None:
    emb = load_embedder(
        {
            "provider": "openai_compatible",
            "endpoint": server.url,
            "model": "text-embed-stub",
            "api_key": "k",
            "timeout_ms": 2000,
            "cache": {"enabled": True, "max_items": 10},
        }
    )
    a = emb.embed_query("same text")
    b = emb.embed_query("same text")
    np.testing.assert_array_equal(a, b)
    assert len(server.calls("embeddings")) == 1


def test_missing_endpoint_is_config_invalid() -> None:
    with pytest.raises(StratamemError) as exc:
        load_embedder({"provider": "openai_compatible", "model": "m"})
    assert (
        exc.value.code == ErrorCode.CONFIG_INVALID
        and exc.value.details["key"] == "embedding.endpoint"
    )


def test_load_embedder_accepts_the_whole_config(server: StubOpenAIServer) -> None:
    from stratamem.core.config.defaults import defaults

    cfg = defaults()
    cfg["embedding"].update(provider="openai_compatible", endpoint=server.url, model="m")
    assert load_embedder(cfg).name == "openai_compatible"
