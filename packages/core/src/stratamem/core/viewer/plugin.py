"""Built-in viewer plugin: the ``stratamem open`` command, named here and imported when chosen."""

from __future__ import annotations

from collections.abc import Callable

from stratamem.core import hookimpl

_COMMAND = "stratamem.core.viewer.command"


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register(
        "open",
        "print the running viewer's URL (--browser opens it)",
        f"{_COMMAND}:configure_open",
        f"{_COMMAND}:run_open",
    )
