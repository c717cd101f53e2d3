"""Built-in CLI commands (health, search, ingest, timeline, doctor, reembed, journal, export, import).

Registered through the same ``register_commands`` hook as any plugin's commands; each works on the
home directly, or through the home owner's socket when a server owns it.
"""

from __future__ import annotations

from collections.abc import Callable

from stratamem.core import hookimpl


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    from stratamem.core.commands import bundle, doctor, ingest, journal, reembed, search, timeline

    for mod in (search, ingest, timeline, doctor, reembed, journal):
        register(mod.NAME, mod.HELP, mod.configure, mod.run)
    register("export", bundle.EXPORT_HELP, bundle.configure_export, bundle.run_export)
    register("import", bundle.IMPORT_HELP, bundle.configure_import, bundle.run_import)
