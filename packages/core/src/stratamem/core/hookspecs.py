"""Hook specifications: what a Stratamem plugin can register.

Every hook hands the plugin a ``register`` callable (simonw/llm style); built-ins use the same hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("stratamem")
# public home: ``stratamem.core.hookimpl`` (this module path keeps working for older plugins)
hookimpl = pluggy.HookimplMarker("stratamem")


@hookspec
def register_embedders(register: Callable[..., None]) -> None:
    """Register embedder factories: ``register(name, factory)``; ``factory(config) -> Embedder``."""


@hookspec
def register_llm_providers(register: Callable[..., None]) -> None:
    """Register LLM provider factories: ``register(name, factory)``; ``factory(config) -> LlmProvider``."""


@hookspec
def register_memory_backends(register: Callable[..., None]) -> None:
    """Register workspace memory backends: ``register(backend)`` (type, name, capabilities, read/write…)."""


@hookspec
def register_host_services(register: Callable[..., None]) -> None:
    """Register gRPC host services for ``stratamem serve``: ``register(name, add_to_server)``.

    ``add_to_server(server, core, context)`` adds the service's handlers to a ``grpc.aio`` server.
    """


@hookspec
def register_commands(register: Callable[..., None]) -> None:
    """Register CLI sub-commands: ``register(name, help, configure, run)``.

    ``configure(parser)`` adds arguments to an argparse sub-parser; ``run(args) -> int`` executes it.
    Either may be given as ``"package.module:function"``: the CLI imports it only when the command
    is chosen, so every other command's process (``stratamem search`` on each turn) skips it.
    """


@hookspec
def register_event_observers(register: Callable[..., None]) -> None:
    """Register callables that receive every core event: ``register(name, observer)``."""


@hookspec
def core_started(core: Any) -> None:
    """Called once a core has opened its home (in the owning process)."""
