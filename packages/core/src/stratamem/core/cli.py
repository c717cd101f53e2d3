"""The ``stratamem`` command: logs and progress on stderr, results on stdout.

Sub-commands are plugins (``register_commands``); the built-in ones are listed in ``builtin_commands``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

Command = tuple[
    str, str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]
]


def _configure_serve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", action="append", default=[], help="unix:PATH or HOST:PORT")


def _run_serve(args: argparse.Namespace) -> int:
    print(
        "stratamem serve: the memory service is not built yet (core engine and gRPC service issues).",
        file=sys.stderr,
    )
    return 2


def builtin_commands() -> list[Command]:
    return [("serve", "run the memory service for a home", _configure_serve, _run_serve)]


def build_parser() -> argparse.ArgumentParser:
    from stratamem.core import __version__
    from stratamem.core.plugins import collect

    parser = argparse.ArgumentParser(
        prog="stratamem", description="Long-term memory for AI agents."
    )
    parser.add_argument("--version", action="version", version=f"stratamem {__version__}")
    parser.add_argument("--home", help="runtime home (default: $STRATAMEM_HOME or ~/.stratamem)")
    parser.add_argument(
        "--namespace", default=None, help="AGENT/PROFILE to act in (default cli/default)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text, configure, run in collect("register_commands"):
        p = sub.add_parser(name, help=help_text)
        configure(p)
        p.set_defaults(_run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Any = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    return int(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
