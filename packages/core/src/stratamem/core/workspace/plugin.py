"""Built-in workspace plugin: the three backends and the ``memory`` CLI, through the public hooks."""

from __future__ import annotations

from collections.abc import Callable

from stratamem.core import hookimpl


@hookimpl
def register_memory_backends(register: Callable[..., None]) -> None:
    from stratamem.core.workspace.file_backend import FileMemoryBackend
    from stratamem.core.workspace.lancedb_backend import LanceDbMemoryBackend
    from stratamem.core.workspace.readonly_backend import ReadOnlyMemoryBackend

    register(FileMemoryBackend())
    register(LanceDbMemoryBackend())
    register(ReadOnlyMemoryBackend())


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register(
        "memory",
        "workspace memory: layered files and the recall store",
        "stratamem.core.workspace.commands:configure",
        "stratamem.core.workspace.commands:run",
    )
