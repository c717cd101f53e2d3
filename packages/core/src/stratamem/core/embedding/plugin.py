"""Built-in embedding plugin: registered through the same hooks as third-party plugins."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stratamem.core import hookimpl


def _local(config: Mapping[str, Any]) -> Any:
    from stratamem.core.embedding.local import create_local_embedder

    return create_local_embedder(config)


def _openai(config: Mapping[str, Any]) -> Any:
    from stratamem.core.embedding.remote import create_openai_embedder

    return create_openai_embedder(config)


@hookimpl
def register_embedders(register: Callable[..., None]) -> None:
    register("local", _local)
    register("openai_compatible", _openai)
