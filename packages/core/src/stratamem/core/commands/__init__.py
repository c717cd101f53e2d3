"""Built-in CLI commands (health, search, ingest, timeline, doctor, reembed, journal, export, import).

Registered through the same ``register_commands`` hook as any plugin's commands; each works on the
home directly, or through the home owner's socket when a server owns it. Each is named here with
its help, its ``configure``/``run`` by reference: a command's module is imported only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable

from stratamem.core import hookimpl

#: name, help, module (``stratamem.core.commands.<module>``), configure, run
BUILTIN: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "search",
        "search the memory (tool_driven by default); --json prints hits and latencies",
        "search",
        "configure",
        "run",
    ),
    (
        "ingest",
        "ingest turns from a JSONL file (routing + capture, idempotent per line)",
        "ingest",
        "configure",
        "run",
    ),
    (
        "timeline",
        "print an episode's traces in order (JSON lines with --json)",
        "timeline",
        "configure",
        "run",
    ),
    (
        "doctor",
        "report rows, fragments, versions, unindexed rows, disk bytes per table, journal backlog and"
        " config.yaml keys that are not settings",
        "doctor",
        "configure",
        "run",
    ),
    (
        "reembed",
        "re-embed every stored vector with the configured embedder (stop the server first)",
        "reembed",
        "configure",
        "run",
    ),
    (
        "journal",
        "list, retry or discard capture-journal entries set aside after failed retries",
        "journal",
        "configure",
        "run",
    ),
    (
        "export",
        "write a JSON bundle of the home's memories (every namespace unless --namespace) to stdout"
        " or --out FILE",
        "bundle",
        "configure_export",
        "run_export",
    ),
    (
        "import",
        "import a JSON bundle written by `stratamem export` (idempotent)",
        "bundle",
        "configure_import",
        "run_import",
    ),
)


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    for name, help_text, module, configure, run in BUILTIN:
        path = f"{__name__}.{module}"
        register(name, help_text, f"{path}:{configure}", f"{path}:{run}")
