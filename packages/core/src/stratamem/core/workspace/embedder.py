"""How workspace memory gets its embedder: injected, or the core's local default loaded lazily."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol


class Embedder(Protocol):
    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Any: ...

    def embed_query(self, text: str) -> Any: ...


EmbedderFactory = Callable[[], Embedder]


def load_default_embedder() -> Embedder:
    """The offline local embedder (all-MiniLM-L6-v2 on onnxruntime) from ``stratamem.core.embedding``."""
    from stratamem.core import embedding

    loader: Any = getattr(embedding, "load_embedder", None)
    if loader is None:  # older core builds: the local embedder module directly
        from stratamem.core.embedding import local

        loader = local.create_local_embedder
    result: Embedder = loader({"provider": "local"})
    return result


class LazyEmbedder:
    """Builds the embedder on first use, once, thread-safely; a failed load is retried next time."""

    def __init__(self, factory: EmbedderFactory | None = None, embedder: Embedder | None = None):
        self._factory = factory or load_default_embedder
        self._embedder = embedder
        self._lock = threading.Lock()

    def get(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    self._embedder = self._factory()
        return self._embedder
