"""The plugin manager: built-ins and ``stratamem`` entry points, loaded once per process."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pluggy

from stratamem.core import hookspecs

#: Built-in plugins, registered exactly like third-party ones.
DEFAULT_PLUGINS: tuple[str, ...] = (
    "stratamem.core.builtins",
    "stratamem.core.commands",
    "stratamem.core.embedding.plugin",
    "stratamem.core.llm.plugin",
    "stratamem.core.workspace.plugin",
    "stratamem.core.viewer.command",
)


@functools.cache
def get_plugin_manager() -> pluggy.PluginManager:
    import importlib

    pm = pluggy.PluginManager("stratamem")
    pm.add_hookspecs(hookspecs)
    for name in DEFAULT_PLUGINS:
        module = importlib.import_module(name)
        pm.register(module, name)
    pm.load_setuptools_entrypoints("stratamem")
    return pm


def collect(hook_name: str) -> list[tuple[Any, ...]]:
    """Call ``hook_name`` with a ``register`` callable and return every registered tuple, in order."""
    items: list[tuple[Any, ...]] = []

    def register(*args: Any) -> None:
        items.append(args)

    hook: Callable[..., Any] = getattr(get_plugin_manager().hook, hook_name)
    hook(register=register)
    return items
