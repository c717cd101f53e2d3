"""Built-in llm plugin: registered through the same hooks as third-party plugins."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stratamem.core import hookimpl


def _none(config: Mapping[str, Any]) -> None:
    return None


def _openai(config: Mapping[str, Any]) -> Any:
    from stratamem.core.llm.openai_compatible import create_openai_llm

    return create_openai_llm(config)


def _host(config: Mapping[str, Any]) -> Any:
    from stratamem.core.llm.host import create_host_llm

    return create_host_llm(config)


@hookimpl
def register_llm_providers(register: Callable[..., None]) -> None:
    register("none", _none)
    register("openai_compatible", _openai)
    register("host", _host)
