"""Entry point of the dsh adapter in the ``stratamem`` plugin group: ``stratamem dsh`` and the
DSH host service of ``stratamem serve``. Import-light (no gRPC or core at import): every ``stratamem``
process loads it, so the command is named here and ``command.py`` imported when chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stratamem.core import hookimpl


def _add_host_service(server: Any, core: Any, context: Any) -> None:
    from stratamem.dsh.service import add_to_server

    add_to_server(server, core, context)


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register(
        "dsh",
        "print or write the DSH bundle patch for the Stratamem plugin",
        "stratamem.dsh.command:configure",
        "stratamem.dsh.command:run",
    )


@hookimpl
def register_host_services(register: Callable[..., None]) -> None:
    register("dsh", _add_host_service)
