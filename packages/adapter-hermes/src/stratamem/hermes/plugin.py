"""Entry point of the hermes adapter in the ``stratamem`` plugin group: the ``stratamem hermes`` command.

Kept import-light: every ``stratamem`` process loads it, so it names the command and its help only;
``command.py`` is imported when the command is chosen. Hermes is never imported here.
"""

from __future__ import annotations

from collections.abc import Callable

from stratamem.core import hookimpl


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register(
        "hermes",
        "install or remove the Stratamem provider for Hermes",
        "stratamem.hermes.command:configure",
        "stratamem.hermes.command:run",
    )
