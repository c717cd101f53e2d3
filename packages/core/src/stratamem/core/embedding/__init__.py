"""Embeddings as plugins: the offline local MiniLM default, an OpenAI-compatible HTTP option, an LRU cache.

``load_embedder(config["embedding"])`` is the one way in; vectors are float32 and L2-normalised.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stratamem.core.embedding.base import (
        Embedder,
        EmbedderFactory,
        Vectors,
        ensure_dimension,
        l2_normalise,
    )
    from stratamem.core.embedding.cache import CachedEmbedder, cache_key
    from stratamem.core.embedding.loader import embedder_factories, load_embedder

# lazy (PEP 562): registering the built-in plugins, or a thin client, must not load what
# these modules import (numpy, LanceDB, pyarrow, onnxruntime)
_LAZY: dict[str, str] = {
    "Embedder": "stratamem.core.embedding.base",
    "EmbedderFactory": "stratamem.core.embedding.base",
    "Vectors": "stratamem.core.embedding.base",
    "ensure_dimension": "stratamem.core.embedding.base",
    "l2_normalise": "stratamem.core.embedding.base",
    "CachedEmbedder": "stratamem.core.embedding.cache",
    "cache_key": "stratamem.core.embedding.cache",
    "embedder_factories": "stratamem.core.embedding.loader",
    "load_embedder": "stratamem.core.embedding.loader",
}

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbedderFactory",
    "Vectors",
    "cache_key",
    "embedder_factories",
    "ensure_dimension",
    "l2_normalise",
    "load_embedder",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
