"""``stratamem memory …``: the workspace memory from a shell; JSON results on stdout.

Sub-commands: read, write, get, search, files, recall-add, recall-search.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stratamem.contract.errors import StratamemError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", default=None, help="project root (default: current directory)")
    sub = parser.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    sub.add_parser("read", help="print the long-term memory (MEMORY.md)")
    w = sub.add_parser("write", help="replace a memory file with stdin or --content")
    w.add_argument("--file", default="MEMORY.md", help="MEMORY.md, DREAMS.md or YYYY-MM-DD.md")
    w.add_argument("--content", default=None)
    g = sub.add_parser("get", help="print lines of a memory file")
    g.add_argument("path")
    g.add_argument("--start", type=int, default=None)
    g.add_argument("--count", type=int, default=None)
    s = sub.add_parser("search", help="search the memory files")
    s.add_argument("query")
    s.add_argument("--limit", type=int, default=None)
    sub.add_parser("files", help="list the memory files")
    a = sub.add_parser("recall-add", help="record a decision, preference or solution")
    a.add_argument("kind", choices=["decision", "preference", "solution"])
    a.add_argument("content")
    a.add_argument("--tag", action="append", default=[])
    a.add_argument("--task-id", default=None)
    a.add_argument("--agent-id", default=None)
    a.add_argument("--session-id", default=None)
    r = sub.add_parser("recall-search", help="search recall records")
    r.add_argument("query", nargs="?", default="")
    r.add_argument("--kind", action="append", default=[])
    r.add_argument("--tag", action="append", default=[])
    r.add_argument("--limit", type=int, default=None)
    r.add_argument("--vector", action="store_true", help="rank with the local embedder")


class _CurrentStderr:
    """Whatever ``sys.stderr`` is at write time (it may be swapped after configuration)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _logs_to_stderr() -> None:
    """Results own stdout: if nobody configured logging, send warnings and worse to stderr."""
    import logging

    import structlog

    if not structlog.is_configured():
        structlog.configure(
            logger_factory=structlog.PrintLoggerFactory(_CurrentStderr()),  # type: ignore[arg-type]
            wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        )


#: actions that only read: like ``search``, they refuse a home that does not exist
READS = frozenset({"read", "get", "search", "files", "recall-search"})


def run(args: argparse.Namespace) -> int:
    _logs_to_stderr()
    from stratamem.contract.hostkit.workspace_tools import plain_result as _plain
    from stratamem.core.commands.common import missing_home_message
    from stratamem.core.home import prepare_home, resolve_home
    from stratamem.core.workspace.service import WorkspaceMemory

    home = resolve_home(getattr(args, "home", None))
    if args.memory_command in READS and not getattr(args, "create", False):
        missing = missing_home_message(args)  # a typo in --home is an error, not a new home
        if missing:
            print(missing, file=sys.stderr)
            return 2
    try:
        memory = WorkspaceMemory(prepare_home(home))  # a write makes a whole 0700 home, as ingest
    except StratamemError as err:
        print(json.dumps({"error": err.to_dict()}, ensure_ascii=False), file=sys.stderr)
        return 1
    root = Path(args.root).absolute() if args.root else Path(os.getcwd())
    try:
        action: dict[str, Callable[[], Any]] = {
            "read": lambda: memory.read(root),
            "write": lambda: memory.write_file(
                root, args.file, args.content if args.content is not None else sys.stdin.read()
            ),
            "get": lambda: memory.get(root, args.path, args.start, args.count),
            "search": lambda: memory.search(root, args.query, args.limit),
            "files": lambda: memory.list_files(root),
            "recall-add": lambda: memory.append_recall(
                root,
                args.kind,
                args.content,
                tags=args.tag,
                source={
                    "task_id": args.task_id,
                    "agent_id": args.agent_id,
                    "session_id": args.session_id,
                    "origin": "cli",
                },
            ),
            "recall-search": lambda: memory.search_recall(
                root,
                args.query,
                kinds=args.kind or None,
                tags=args.tag or None,
                limit=args.limit,
                vector_provider=memory.default_vector_provider() if args.vector else None,
            ),
        }
        result = action[args.memory_command]()
        print(json.dumps(_plain(result), ensure_ascii=False, indent=2))
        return 0
    except StratamemError as err:
        print(json.dumps({"error": err.to_dict()}, ensure_ascii=False), file=sys.stderr)
        return 1
    finally:
        memory.close(wait=True)
