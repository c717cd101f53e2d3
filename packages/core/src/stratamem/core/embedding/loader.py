"""Turn the ``embedding`` config section into an embedder: plugin lookup by provider, then the cache."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.embedding.base import Embedder, EmbedderFactory
from stratamem.core.embedding.cache import CachedEmbedder
from stratamem.core.plugins import collect


def embedder_factories() -> dict[str, EmbedderFactory]:
    """Every registered provider name → factory (later registrations win)."""
    return {str(item[0]): item[1] for item in collect("register_embedders")}


def load_embedder(config: Mapping[str, Any] | None = None) -> Embedder:
    """An embedder for the ``embedding`` section (``provider`` defaults to ``local``), cached unless
    ``cache.enabled`` is false. Unknown providers are ``config_invalid``."""
    cfg = dict(config or {})
    if isinstance(cfg.get("embedding"), Mapping):  # the whole config was passed
        cfg = dict(cfg["embedding"])
    provider = str(cfg.get("provider") or "local")
    factories = embedder_factories()
    factory = factories.get(provider)
    if factory is None:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"embedding.provider {provider!r} is not registered (known: {', '.join(sorted(factories))})",
            {"key": "embedding.provider", "value": provider, "known": sorted(factories)},
        )
    try:
        embedder = factory(cfg)
    except StratamemError:
        raise
    except Exception as exc:
        raise StratamemError(
            ErrorCode.EMBEDDING_UNAVAILABLE,
            f"embedding provider {provider!r} failed to start: {exc}",
            {"provider": provider},
        ) from exc
    cache = cfg.get("cache") or {}
    if not isinstance(cache, Mapping) or cache.get("enabled", True):
        max_items = int(cache.get("max_items", 2048)) if isinstance(cache, Mapping) else 2048
        return CachedEmbedder(embedder, max_items=max_items)
    return embedder
