"""The offline default embedder: real all-MiniLM-L6-v2 (int8 ONNX), vendored tokenizer, no torch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.embedding import CachedEmbedder, ensure_dimension, load_embedder
from stratamem.core.embedding.local import create_local_embedder, vendored_tokenizer_path

CAT = "The cat is sleeping on the warm windowsill."
KITTEN = "A kitten naps in the sun by the window."


@pytest.fixture(scope="module")
def local():  # type: ignore[no-untyped-def]
    return create_local_embedder({"model": "all-MiniLM-L6-v2"})


def test_dimension_is_read_from_the_model_and_is_384(local) -> None:  # type: ignore[no-untyped-def]
    assert local.dimension == 384
    assert local.embed_query("hello").shape == (384,)


def test_paraphrase_cosine_matches_the_reference_model(local) -> None:  # type: ignore[no-untyped-def]
    a, b = local.embed_documents([CAT, KITTEN])
    assert float(a @ b) == pytest.approx(0.60, abs=0.02)


def test_paraphrases_beat_every_unrelated_pair(local) -> None:  # type: ignore[no-untyped-def]
    para = [
        (CAT, KITTEN),
        ("Revenue grew 12 percent last quarter.", "Sales rose 12 percent in the last quarter."),
        ("How do I reset my password?", "What are the steps to change my login password?"),
    ]
    unrelated = [
        (CAT, "Revenue grew 12 percent last quarter."),
        ("How do I reset my password?", "The mountain was covered in fresh snow."),
        (KITTEN, "Compile the Rust crate with cargo build --release."),
    ]

    def cos(x: str, y: str) -> float:
        v = local.embed_documents([x, y])
        return float(v[0] @ v[1])

    worst_para = min(cos(x, y) for x, y in para)
    best_unrelated = max(cos(x, y) for x, y in unrelated)
    assert worst_para > best_unrelated + 0.2


def test_rows_are_float32_unit_length_and_batch_order_is_kept(local) -> None:  # type: ignore[no-untyped-def]
    texts = [f"sentence number {i} " + "word " * (i % 7) for i in range(70)]  # > 2 batches of 32
    rows = local.embed_documents(texts)
    assert rows.dtype == np.float32 and rows.shape == (70, 384)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    # batching and length-sorting must not change any row: compare with one-at-a-time
    for i in (0, 13, 69):
        np.testing.assert_allclose(rows[i], local.embed_query(texts[i]), atol=1e-5)


def test_padding_is_batch_longest_not_fixed_128(local) -> None:  # type: ignore[no-untyped-def]
    enc = local._tokenizer.encode_batch(["short", "a slightly longer sentence here"])
    assert len(enc[0].ids) == len(enc[1].ids) < 20
    long = local._tokenizer.encode("word " * 1000)
    assert len(long.ids) == 256


def test_long_text_is_truncated_not_rejected(local) -> None:  # type: ignore[no-untyped-def]
    v = local.embed_query("memory " * 5000)
    assert v.shape == (384,) and np.isfinite(v).all()


def test_empty_batch_gives_an_empty_matrix(local) -> None:  # type: ignore[no-untyped-def]
    assert local.embed_documents([]).shape == (0, 384)


def test_non_string_input_is_a_typed_error(local) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StratamemError) as exc:
        local.embed_documents(["ok", 3])  # type: ignore[list-item]
    assert exc.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(StratamemError):
        local.embed_documents("a bare string")


def test_load_embedder_defaults_to_the_cached_local_model() -> None:
    emb = load_embedder({"provider": "local"})
    assert isinstance(emb, CachedEmbedder)
    assert (emb.name, emb.model, emb.dimension) == ("local", "all-MiniLM-L6-v2", 384)
    bare = load_embedder({"cache": {"enabled": False}})
    assert not isinstance(bare, CachedEmbedder) and bare.name == "local"


def test_unknown_provider_or_model_is_config_invalid() -> None:
    with pytest.raises(StratamemError) as exc:
        load_embedder({"provider": "nope"})
    assert (
        exc.value.code == ErrorCode.CONFIG_INVALID
        and exc.value.details["key"] == "embedding.provider"
    )
    with pytest.raises(StratamemError) as exc2:
        load_embedder({"provider": "local", "model": "/does/not/exist"})
    assert exc2.value.code == ErrorCode.CONFIG_INVALID


def test_dimension_mismatch_says_how_to_reembed(local) -> None:  # type: ignore[no-untyped-def]
    ensure_dimension(384, local)
    with pytest.raises(StratamemError) as exc:
        ensure_dimension(768, local, table="traces")
    assert exc.value.code == ErrorCode.EMBEDDING_DIMENSION_MISMATCH
    assert "stratamem reembed" in exc.value.message
    assert exc.value.details["expected"] == 768 and exc.value.details["actual"] == 384


def test_tokenizer_ships_as_package_data_with_its_license() -> None:
    folder = vendored_tokenizer_path().parent
    assert (folder / "tokenizer.json").is_file()
    assert "Apache License" in (folder / "LICENSE").read_text()
    assert "all-MiniLM-L6-v2" in (folder / "NOTICE").read_text()


def test_embedding_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from stratamem.core.embedding import load_embedder\n"
        "load_embedder({}).embed_query('x')\n"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_one_session_is_shared_and_safe_across_threads(local) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    assert create_local_embedder({}) is local  # one ONNX session per process and model
    texts = [f"thread safety check {i}" for i in range(8)]
    expected = local.embed_documents(texts)
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(local.embed_query, texts))
    np.testing.assert_allclose(np.stack(rows), expected, atol=1e-5)


def test_an_embed_from_a_fresh_home_directory_leaves_no_onnxruntime_telemetry(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """onnxruntime's 1DS telemetry writes a device id under ~/.cache/Microsoft on import; the
    embedder turns it off (a fresh process and HOME, as a user's first run)."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"))
    code = (
        "from stratamem.core.embedding import load_embedder;"
        "print(load_embedder({'provider': 'local'}).embed_query('hello').shape)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(384,)"
    assert not (tmp_path / ".cache" / "Microsoft").exists()


def test_threads_and_batch_size_come_from_the_config(local) -> None:  # type: ignore[no-untyped-def]
    # ``embedding.batch_size`` was ignored by the local provider (always 32)
    two = create_local_embedder({"threads": 2, "batch_size": 4})
    assert two is not local
    assert two._session.get_session_options().intra_op_num_threads == 2
    assert two.batch_size == 4
    assert local._session.get_session_options().intra_op_num_threads == 1
    assert local.batch_size == 32
    texts = [f"a sentence of some length number {i} " * (1 + i % 4) for i in range(10)]
    np.testing.assert_allclose(two.embed_documents(texts), local.embed_documents(texts), atol=1e-5)
