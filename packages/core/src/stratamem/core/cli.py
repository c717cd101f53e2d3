"""The ``stratamem`` command: logs and progress on stderr, results on stdout.

Sub-commands are plugins (``register_commands``); the built-in ones are listed in ``builtin_commands``.
A command's parser is filled in, and its module imported, only when it is the one chosen: a fresh
``stratamem search`` against a running service pays for the search, not for every command
(bench/results/startup-session19.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

#: a command's ``configure`` or ``run``: the callable, or ``"module:attribute"`` naming it
Ref = Callable[..., Any] | str
Command = tuple[str, str, Ref, Ref]

_SERVER = "stratamem.core.server.command"


def builtin_commands() -> list[Command]:
    """The core's own service commands (``stratamem.core.server.command``), named by reference."""
    return [
        (
            "start",
            "start the home's resident service unless it runs",
            f"{_SERVER}:configure_start",
            f"{_SERVER}:run_start",
        ),
        (
            "stop",
            "stop the home's resident service (it drains first)",
            f"{_SERVER}:configure_stop",
            f"{_SERVER}:run_stop",
        ),
        (
            "serve",
            "run the memory service for a home (gRPC)",
            f"{_SERVER}:configure_serve",
            f"{_SERVER}:run_serve",
        ),
        (
            "health",
            "report the core's health, one fact per line (--json: JSON; over the owner's socket "
            "when served)",
            f"{_SERVER}:configure_health",
            f"{_SERVER}:run_health",
        ),
    ]


def resolve(ref: Ref) -> Callable[..., Any]:
    """The callable ``ref`` names (``"package.module:attribute"``), imported now; a callable as is."""
    if not isinstance(ref, str):
        return ref
    import importlib

    module, sep, attribute = ref.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"a command reference is 'module:attribute', got {ref!r}")
    found: Callable[..., Any] = getattr(importlib.import_module(module), attribute)
    return found


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


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _SubParsers = argparse._SubParsersAction


class Commands(_SubParsers):
    """The sub-commands: each is named with its help at once (``--help`` lists them all), and its
    ``configure``/``run`` are resolved and applied only when the command is chosen."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, tuple[Ref, Ref]] = {}

    def add_command(self, name: str, help_text: str, configure: Ref, run: Ref) -> None:
        self.add_parser(name, help=help_text, description=help_text)
        self._pending[name] = (configure, run)

    def complete(self, name: str) -> argparse.ArgumentParser:
        """The parser of command ``name`` with its own arguments, the global options (nested
        commands too: ``stratamem hermes install --home H``) and its ``run`` as ``_run``."""
        parser = self.choices[name]
        pending = self._pending.pop(name, None)
        if pending is not None:
            configure, run = pending
            resolve(configure)(parser)
            parser.set_defaults(_run=resolve(run))
            todo = [parser]
            while todo:
                p = todo.pop()
                _global_options(p, top=False)
                todo.extend(_subparsers(p))
        return parser

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values and values[0] in self.choices:  # else argparse names the invalid choice
            self.complete(values[0])
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    from stratamem.core import __version__
    from stratamem.core.plugins import collect

    parser = argparse.ArgumentParser(
        prog="stratamem", description="Long-term memory for AI agents."
    )
    parser.add_argument("--version", action="version", version=f"stratamem {__version__}")
    _global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", action=Commands)
    assert isinstance(sub, Commands)
    for name, help_text, configure, run in collect("register_commands"):
        sub.add_command(name, help_text, configure, run)
    return parser


def _configure_structlog() -> None:
    import logging

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


class _AfterImport:
    """A meta-path finder that calls ``then`` right after module ``name``'s body first ran, then
    leaves ``sys.meta_path``: a configuration applied when (and only if) the module comes in. (A
    ``find_spec`` probe that imports nothing leaves it in place.)"""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            find = None if finder is self else getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _ThenLoader(spec.loader, self)
        return spec

    def imported(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self.then()


class _ThenLoader:
    """The real loader; tells the finder once the module's body ran."""

    def __init__(self, real: Any, finder: _AfterImport) -> None:
        self._real, self._finder = real, finder

    def __getattr__(self, name: str) -> Any:  # resource readers, get_code, is_package, …
        return getattr(self._real, name)

    def create_module(self, spec: Any) -> Any:
        return self._real.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._real.exec_module(module)
        self._finder.imported()


def _console_logging() -> None:
    """CLI default: structlog's own loggers write on stderr (results own stdout), level from
    ``$STRATAMEM_LOG_LEVEL``. Applied when structlog is first imported: a command that never
    imports it (a served search) does not pay for it (~25 ms)."""
    if "structlog" in sys.modules:
        _configure_structlog()
    elif not any(isinstance(f, _AfterImport) and f.name == "structlog" for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport("structlog", _configure_structlog))


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
    if not getattr(run, "through_service", False):  # (such a command prepares it if --offline)
        from stratamem.core.commands.common import prepare_allocator

        prepare_allocator(args)
    if getattr(run, "reads_home", False) and not args.create:
        from stratamem.core.commands.common import missing_home_message

        missing = missing_home_message(args)
        if missing:
            print(missing, file=sys.stderr)
            return 2
    try:
        code = int(run(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        # (``--offline`` ran the engine here: its finalization is left as it was)
        _state["served"] = bool(getattr(run, "through_service", False)) and not getattr(
            args, "offline", False
        )
    except BrokenPipeError:
        # `stratamem search … | head -1`: the reader is gone, which is not an error of ours; no
        # traceback, and nothing more is written to the dead pipe at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command killed by it
    return code


#: what ``main`` tells ``script``: whether the command that ran only talked to the service
_state = {"served": False}


def script() -> None:
    """The ``stratamem`` console script: ``main``, then the exit. After a command that only talked
    to the service (``through_service``, run to its end, not ``--offline``), the finalization is
    skipped: tearing down ~290 modules took ~22 ms of a ~250 ms served search
    (bench/results/startup-session19.md). Exit handlers still run and stdio is flushed first;
    anything else (another command, a thread still running) exits as usual."""
    import threading

    code = main()
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if _state["served"] and not any(t.is_alive() and not t.daemon for t in others):
        import atexit

        atexit._run_exitfuncs()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: leave it to the usual exit
            raise SystemExit(code) from None
        os._exit(code)
    raise SystemExit(code)


if __name__ == "__main__":
    script()
