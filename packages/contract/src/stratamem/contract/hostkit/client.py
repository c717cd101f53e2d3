"""The thin client's way to a home's resident service: find it, start it on demand, connect.

One long-lived ``stratamem serve`` owns a home; hosts and CLI calls are short-lived processes that
reach it over the home's Unix socket. This module is the only place that knows how:

- **Find**: the owner holds ``<home>/owner.lock`` (an ``fcntl`` lock that dies with its process) and
  advertises its socket there and in ``<home>/run/serve.json``. A record whose lock nobody holds, or
  whose socket refuses, is stale and never trusted.
- **Start**: when nobody owns the home, the first client starts ``stratamem serve --home H`` detached
  (own session and process group, output in ``<home>/logs/serve.log``). ``run/start.lock`` plus
  ``run/start.json`` (the starting pid) make racing clients wait for that one server instead of
  starting their own.
- **Connect**: a ``RemoteCore`` whose transport failures call back here, so a client that loses
  its service (idle exit, crash, SIGKILL) starts a new one and resends what was not acknowledged.

Imports nothing heavy: the stdlib, grpc and ``stratamem.contract``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stratamem.contract import __version__ as CONTRACT_VERSION
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.files import write_atomic
from stratamem.contract.hostkit.home import make_dirs, pid_alive

OWNER_LOCK = "owner.lock"
RUN_DIR = "run"
SERVE_JSON = "serve.json"
START_LOCK = "start.lock"
START_JSON = "start.json"
SERVE_LOG = "serve.log"
#: How long a client waits, by default, for a service it had to start (a cold engine start on a
#: loaded 2-core machine takes several seconds: imports, embedder, LanceDB).
DEFAULT_START_BUDGET_S = 60.0
#: A recorded start older than this no longer stops another client from starting one.
START_STALE_S = 120.0
_POLL_S = 0.05
#: ``stratamem serve``'s exit code when another process already owns the home.
EXIT_OWNED = 3

#: Children this process started, so their exit is seen (and reaped) rather than a zombie pid.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def socket_answers(path: str, timeout_s: float = 0.5) -> bool:
    """Whether something accepts connections on the Unix socket ``path`` (a refusal is stale)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(timeout_s)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def owner_record(home: Path) -> dict[str, Any] | None:
    """The owner's record (``pid``, ``socket``) while some process holds the home's lock, else None."""
    path = Path(home) / OWNER_LOCK
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):  # no home there (yet): nobody owns it
        return None
    except PermissionError as exc:
        raise StratamemError(
            ErrorCode.HOME_LOCKED,
            f"home {home} belongs to another user (cannot read {path})",
            {"home": str(home)},
        ) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raw = os.pread(fd, 65536, 0).decode("utf-8", "replace").strip()
            try:
                data = json.loads(raw) if raw else {}
            except ValueError:
                data = {}
            return data if isinstance(data, dict) else {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # a leftover file: nobody holds the lock
    finally:
        os.close(fd)


def read_serve_json(home: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((Path(home) / RUN_DIR / SERVE_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _check_compatible(home: Path, info: dict[str, Any]) -> None:
    """A service of another user or another contract version answers a typed error, not a hang."""
    uid = info.get("uid")
    if isinstance(uid, int) and uid != os.getuid():
        raise StratamemError(
            ErrorCode.HOME_LOCKED,
            f"home {home} is served by another user's service (uid {uid}, pid {info.get('pid')})",
            {"home": str(home), "pid": info.get("pid"), "uid": uid, "socket": info.get("socket")},
        )
    theirs = info.get("contract_version")
    if isinstance(theirs, str) and _major_minor(theirs) != _major_minor(CONTRACT_VERSION):
        raise StratamemError(
            ErrorCode.HOME_LOCKED,
            f"home {home} is served by stratamem {theirs} (pid {info.get('pid')}), this client is "
            f"{CONTRACT_VERSION}: stop that service or use the same version",
            {
                "home": str(home),
                "pid": info.get("pid"),
                "version": theirs,
                "client_version": CONTRACT_VERSION,
                "socket": info.get("socket"),
            },
        )


def live_socket(home: Path) -> str | None:
    """The socket of the service that owns ``home`` right now, or None (no owner, not serving yet,
    or a stale record). Raises ``home_locked`` for another user's or another version's service.

    The owner record (``owner.lock``, written when the home is locked) names the owner's uid and
    contract version, and so does ``serve.json`` once the service is up: both are checked, and
    while neither says which contract the owner speaks the socket is not handed out (an owner
    from before the record carried it writes ``serve.json`` a moment later)."""
    home = Path(home)
    record = owner_record(home)
    if record is None:
        return None
    info = read_serve_json(home)
    if info is not None and info.get("pid") != record.get("pid"):
        info = None  # an earlier owner's leftover
    _check_compatible(home, record)
    if info is not None:
        _check_compatible(home, info)
    if "contract_version" not in record and info is None:
        return None  # between owner.lock and serve.json, the version is not known yet
    sock = record.get("socket") or (info or {}).get("socket")
    if isinstance(sock, str) and sock and socket_answers(sock):
        return sock
    return None


def _pid_alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    return pid_alive(pid)


def _absolute(home: str | os.PathLike[str]) -> Path:
    return Path(home).expanduser().absolute()


def prepare(home: Path) -> Path:
    """Create the home's ``run/`` and ``logs/`` (mode 0700); ``path_not_writable`` at once if it can't."""
    return make_dirs(Path(home).expanduser().absolute(), (RUN_DIR, "logs"), RUN_DIR)


def serve_argv(home: Path) -> list[str]:
    """How a client starts the home's service: this interpreter's ``stratamem serve``."""
    override = os.environ.get("STRATAMEM_SERVE_PYTHON")
    python = override or sys.executable
    return [python, "-m", "stratamem.core.cli", "serve", "--home", str(home)]


def _spawn(home: Path, argv: Sequence[str] | None) -> int:
    log = open(home / "logs" / SERVE_LOG, "ab")  # noqa: SIM115 - handed to the child
    try:
        proc = subprocess.Popen(
            list(argv or serve_argv(home)),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=str(home),
            start_new_session=True,  # own session and process group: outlives this client
            close_fds=True,
        )
    finally:
        log.close()
    _CHILDREN[proc.pid] = proc
    threading.Thread(target=proc.wait, name="stratamem-serve-reaper", daemon=True).start()
    return proc.pid


def _start_once(home: Path, argv: Sequence[str] | None) -> int | None:
    """Start the service unless it runs or another client is starting it; the started pid or None."""
    run = home / RUN_DIR
    fd = os.open(run / START_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for milliseconds: check, spawn, record
        if owner_record(home) is not None:
            return None
        start = run / START_JSON
        with contextlib.suppress(OSError, ValueError):
            rec = json.loads(start.read_text(encoding="utf-8"))
            pid, at = int(rec.get("pid", 0)), float(rec.get("at", 0))
            if pid > 0 and _pid_alive(pid) and time.time() - at < START_STALE_S:
                return None  # somebody's start is under way: wait for it
        pid = _spawn(home, argv)
        record = json.dumps({"pid": pid, "at": time.time(), "by": os.getpid()})
        write_atomic(start, record, 0o600)  # as every home file
        return pid
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


#: how ``stratamem serve`` starts its log lines; its typed start-up error follows it as
#: ``[code] message`` (``str(StratamemError)``), its ready line as ``ready (pid N)``
SERVE_PREFIX = "stratamem serve: "
SERVE_ERROR_PREFIX = SERVE_PREFIX + "["
SERVE_READY_PREFIX = SERVE_PREFIX + "ready"


def _last_log_line(home: Path) -> str:
    """The service's last words (its start-up error), for the client's error message."""
    try:
        with open(home / "logs" / SERVE_LOG, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 2000))
            lines = [x for x in f.read().decode("utf-8", "replace").splitlines() if x.strip()]
    except OSError:
        return "no log"
    for line in reversed(lines):  # its typed error's first line, not the tail of a YAML excerpt
        if line.startswith(SERVE_READY_PREFIX):
            break  # an earlier run's start: this one left no typed error
        if line.startswith(SERVE_ERROR_PREFIX):
            return line.removeprefix(SERVE_PREFIX)[:300]
    return lines[-1][-300:] if lines else "no output"


def ensure_service(
    home: str | os.PathLike[str],
    budget_s: float = DEFAULT_START_BUDGET_S,
    *,
    start: bool = True,
    argv: Sequence[str] | None = None,
) -> str:
    """The socket of ``home``'s service, starting it if nobody owns the home.

    Waits at most ``budget_s`` (the caller's own budget); ``transport_closed`` when no service
    answers by then, ``home_locked`` when another user's or version's service owns the home.
    """
    path = prepare(Path(home))
    give_up = time.monotonic() + max(0.0, budget_s)
    started: int | None = None
    while True:
        sock = live_socket(path)
        if sock:
            return sock
        if start and owner_record(path) is None:
            if started is not None and not _pid_alive(started):
                code = _CHILDREN[started].returncode if started in _CHILDREN else None
                if code != EXIT_OWNED:  # 3: another server won the race; wait for it
                    raise StratamemError(
                        ErrorCode.TRANSPORT_CLOSED,
                        f"stratamem serve for home {path} exited with {code}: "
                        f"{_last_log_line(path)} (see {path / 'logs' / SERVE_LOG})",
                        {"home": str(path), "exit_code": code},
                    )
                started = None
            started = _start_once(path, argv) or started
        if time.monotonic() >= give_up:
            break
        time.sleep(_POLL_S)
    hint = f"; see {path / 'logs' / SERVE_LOG}" if start else ""
    raise StratamemError(
        ErrorCode.TRANSPORT_CLOSED,
        f"no stratamem service answered for home {path} within {budget_s:.1f}s{hint}",
        {"home": str(path), "started_pid": started},
    )


async def ensure_service_async(
    home: str | os.PathLike[str], budget_s: float = DEFAULT_START_BUDGET_S, **kwargs: Any
) -> str:
    return await asyncio.to_thread(ensure_service, home, budget_s, **kwargs)


async def connect(
    home: str | os.PathLike[str],
    budget_s: float = DEFAULT_START_BUDGET_S,
    *,
    start: bool = True,
    **options: Any,
) -> Any:
    """A ``RemoteCore`` on ``home``'s service (started on demand) that reconnects the same way."""
    from stratamem.contract.remote import RemoteCore

    path = _absolute(home)
    sock = await ensure_service_async(path, budget_s, start=start)

    async def reconnect() -> str:
        return "unix:" + await ensure_service_async(path, budget_s, start=start)

    return RemoteCore(f"unix:{sock}", reconnect=reconnect, **options)


def connect_blocking(
    home: str | os.PathLike[str],
    budget_s: float = DEFAULT_START_BUDGET_S,
    *,
    start: bool = True,
    **options: Any,
) -> Any:
    """``connect`` for threaded hosts: a ``BlockingRemoteCore`` (any thread may call it)."""
    from stratamem.contract.remote import BlockingRemoteCore

    path = _absolute(home)
    sock = ensure_service(path, budget_s, start=start)

    async def reconnect() -> str:
        return "unix:" + await ensure_service_async(path, budget_s, start=start)

    return BlockingRemoteCore(f"unix:{sock}", reconnect=reconnect, **options)


def stop_service(home: str | os.PathLike[str], timeout_s: float = 30.0) -> int | None:
    """SIGTERM the service owning ``home`` (it drains, then releases the home) and wait for the home
    to be free; the pid stopped, or None when nobody owned it. ``home_locked`` if it will not go."""
    import signal

    path = _absolute(home)
    owner = owner_record(path)
    if owner is None:
        return None
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        raise StratamemError(
            ErrorCode.HOME_LOCKED,
            f"home {path} has no stoppable owner ({pid})",
            {"home": str(path)},
        )
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError as exc:
        raise StratamemError(
            ErrorCode.HOME_LOCKED,
            f"home {path} is served by another user's process {pid}",
            {"home": str(path), "pid": pid},
        ) from exc
    give_up = time.monotonic() + timeout_s
    while owner_record(path) is not None:
        if time.monotonic() > give_up:
            raise StratamemError(
                ErrorCode.HOME_LOCKED,
                f"process {pid} still owns {path} after {timeout_s:.0f}s",
                {"home": str(path), "pid": pid},
            )
        child = _CHILDREN.get(pid)
        if child is not None:
            child.poll()
        time.sleep(_POLL_S)
    return pid


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m stratamem.contract.hostkit.client --home H [--budget S]``: print the socket of
    H's service (started if needed) as JSON; how non-Python plugins follow the same rules."""
    import argparse

    parser = argparse.ArgumentParser(prog="stratamem-ensure-service")
    parser.add_argument("--home", required=True)
    parser.add_argument("--budget", type=float, default=DEFAULT_START_BUDGET_S)
    parser.add_argument("--no-start", action="store_true")
    args = parser.parse_args(argv)
    try:
        sock = ensure_service(args.home, args.budget, start=not args.no_start)
    except StratamemError as exc:
        print(json.dumps({"error": exc.to_dict()}), file=sys.stderr)
        return 1
    info = read_serve_json(Path(args.home).expanduser().absolute()) or {}
    print(json.dumps({"socket": sock, "pid": info.get("pid")}))
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through subprocesses
    raise SystemExit(main())


__all__ = [
    "DEFAULT_START_BUDGET_S",
    "connect",
    "connect_blocking",
    "ensure_service",
    "ensure_service_async",
    "live_socket",
    "owner_record",
    "socket_answers",
    "stop_service",
]
