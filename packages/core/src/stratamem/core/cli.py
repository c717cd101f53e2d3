"""The ``stratamem`` command: logs and progress on stderr, results on stdout.

Sub-commands are plugins (``register_commands``); the built-in ones are listed in ``builtin_commands``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

Command = tuple[
    str, str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]
]


def builtin_commands() -> list[Command]:
    """The core's own commands (the serve/health pair lives in ``stratamem.core.server``)."""
    from stratamem.core.server.command import commands

    return list(commands())


def _global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command takes, before or after its name (``stratamem search --home H q``).

    Below the top level they default to SUPPRESS, so a value given before the command name stands;
    an option a command defines itself (``serve --home``) is left to it."""

    def add(flag: str, **kw: Any) -> None:
        if flag in parser._option_string_actions:
            return
        if not top:
            kw["default"] = argparse.SUPPRESS
        parser.add_argument(flag, **kw)

    add("--home", default=None, help="runtime home (default: $STRATAMEM_HOME or ~/.stratamem)")
    add(
        "--namespace",
        default=None,
        help="AGENT/PROFILE to act in (default cli/default; search, timeline and export "
        "look in every namespace of the home when it is not given)",
    )
    add("--json", action="store_true", default=False, help="print JSON (machine-readable) output")
    add(
        "--offline",
        action="store_true",
        default=False,
        help="open the engine in this process instead of through the home's service (maintenance)",
    )
    add(
        "--create",
        action="store_true",
        default=False,
        help="create the home if it does not exist (read commands refuse a missing home)",
    )


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            out.extend(action.choices.values())
    return out


def build_parser() -> argparse.ArgumentParser:
    from stratamem.core import __version__
    from stratamem.core.plugins import collect

    parser = argparse.ArgumentParser(
        prog="stratamem", description="Long-term memory for AI agents."
    )
    parser.add_argument("--version", action="version", version=f"stratamem {__version__}")
    _global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text, configure, run in collect("register_commands"):
        p = sub.add_parser(name, help=help_text, description=help_text)
        configure(p)
        p.set_defaults(_run=run)
    todo = _subparsers(parser)
    while todo:  # nested commands too (``stratamem hermes install --home H``)
        p = todo.pop()
        _global_options(p, top=False)
        todo.extend(_subparsers(p))
    return parser


def _console_logging() -> None:
    """CLI default: logs on stderr (results own stdout), level from ``$STRATAMEM_LOG_LEVEL``."""
    import logging
    import os

    import structlog

    level = getattr(logging, os.environ.get("STRATAMEM_LOG_LEVEL", "WARNING").upper(), 30)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def _prepare_allocator(args: argparse.Namespace) -> None:
    """Cap glibc's malloc arenas before anything of the engine starts a thread: importing pyarrow
    and LanceDB already makes arenas that later threads are spread over (storage/allocator.py
    ``prepare_process``). The home's config file may set the cap; one that cannot be read leaves
    the defaults (the command reports it)."""
    from stratamem.core.config.defaults import DEFAULTS
    from stratamem.core.storage import allocator

    storage = dict(DEFAULTS["storage"])
    try:
        from stratamem.core.config.loader import CONFIG_FILE, read_user_config
        from stratamem.core.home import resolve_home

        user = read_user_config(resolve_home(getattr(args, "home", None)) / CONFIG_FILE)
        storage.update(user.get("storage") or {})
    except Exception:  # the command itself reports a bad home or config
        pass
    allocator.prepare_process(storage)


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given == ["--version"]:  # answered before plugins load (the parser says the same)
        from stratamem.core import __version__

        print(f"stratamem {__version__}")
        return 0
    _console_logging()
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Any = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    _prepare_allocator(args)
    if getattr(run, "reads_home", False) and not args.create:
        from stratamem.core.commands.common import missing_home_message

        missing = missing_home_message(args)
        if missing:
            print(missing, file=sys.stderr)
            return 2
    try:
        code = int(run(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
    except BrokenPipeError:
        # `stratamem search … | head -1`: the reader is gone, which is not an error of ours; no
        # traceback, and nothing more is written to the dead pipe at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command killed by it
    return code


if __name__ == "__main__":
    raise SystemExit(main())
