"""The plugin manager: built-ins and ``stratamem`` entry points, loaded once per process (the entry
points read by ``entry_points.py``, the way ``importlib.metadata`` finds them, without importing it)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pluggy

from stratamem.core import entry_points, hookspecs

#: Built-in plugins, registered exactly like third-party ones.
DEFAULT_PLUGINS: tuple[str, ...] = (
    "stratamem.core.builtins",
    "stratamem.core.commands",
    "stratamem.core.embedding.plugin",
    "stratamem.core.llm.plugin",
    "stratamem.core.workspace.plugin",
    "stratamem.core.viewer.plugin",
)


@functools.cache
def get_plugin_manager() -> pluggy.PluginManager:
    import importlib

    pm = pluggy.PluginManager("stratamem")
    pm.add_hookspecs(hookspecs)
    for name in DEFAULT_PLUGINS:
        module = importlib.import_module(name)
        pm.register(module, name)
    entries = entry_points.read("stratamem")
    if entries is None:  # a path entry or finder only importlib.metadata reads
        pm.load_setuptools_entrypoints("stratamem")
    else:  # what load_setuptools_entrypoints does, without importing importlib.metadata
        for name, value in entries:
            if pm.get_plugin(name) is None and not pm.is_blocked(name):
                pm.register(entry_points.load(value), name=name)
    return pm


def collect(hook_name: str) -> list[tuple[Any, ...]]:
    """Call ``hook_name`` with a ``register`` callable and return every registered tuple, in order."""
    items: list[tuple[Any, ...]] = []

    def register(*args: Any) -> None:
        items.append(args)

    hook: Callable[..., Any] = getattr(get_plugin_manager().hook, hook_name)
    hook(register=register)
    return items


def attach_event_observers(bus: Any) -> list[str]:
    """Give every observer registered through ``register_event_observers`` the core's events
    (``register(name, observer)``; an observer's exception never reaches the core). Returns names."""
    names = []
    for name, observer in collect("register_event_observers"):
        bus.add_observer(observer)
        names.append(str(name))
    return names


def announce_core_started(core: Any) -> None:
    """Call every ``core_started`` hook once the core owns its home (a failing plugin is logged)."""
    from stratamem.core.telemetry import get_logger

    for impl in get_plugin_manager().hook.core_started.get_hookimpls():
        try:
            impl.function(core=core)
        except Exception as exc:
            get_logger("plugins").warning(
                "plugins.core_started_failed", plugin=impl.plugin_name, error=str(exc)
            )
