"""Built-in plugin: registers the core's own embedders, LLM providers, backends and commands."""

from __future__ import annotations

from collections.abc import Callable

from stratamem.core import hookimpl


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    from stratamem.core.cli import builtin_commands

    for name, help_text, configure, run in builtin_commands():
        register(name, help_text, configure, run)
