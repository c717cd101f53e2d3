"""Entry point of the openclaw adapter in the ``stratamem`` plugin group: the ``stratamem openclaw``
command and the OpenClaw host service of ``stratamem serve``. Import-light (no gRPC at import): every
``stratamem`` process loads it, so the command is named here and ``command.py`` imported when chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stratamem.core import hookimpl


def _add_host_service(server: Any, core: Any, context: Any) -> None:
    from stratamem.openclaw.service import add_to_server

    add_to_server(server, core, context)


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register(
        "openclaw",
        "install or remove the Stratamem memory plugin for OpenClaw",
        "stratamem.openclaw.command:configure",
        "stratamem.openclaw.command:run",
    )


@hookimpl
def register_host_services(register: Callable[..., None]) -> None:
    register("openclaw", _add_host_service)
