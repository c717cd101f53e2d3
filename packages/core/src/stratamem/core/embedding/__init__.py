"""Embeddings as plugins: the offline local MiniLM default, an OpenAI-compatible HTTP option, an LRU cache.

``load_embedder(config["embedding"])`` is the one way in; vectors are float32 and L2-normalised.
"""

from stratamem.core.embedding.base import (
    Embedder,
    EmbedderFactory,
    Vectors,
    ensure_dimension,
    l2_normalise,
)
from stratamem.core.embedding.cache import CachedEmbedder, cache_key
from stratamem.core.embedding.loader import embedder_factories, load_embedder

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
