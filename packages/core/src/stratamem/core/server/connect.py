"""One owner per home, shared transparently: own the home (and serve its socket), or reach its owner.

``open_or_connect`` is what ``open_core`` uses: a process that takes the home's lock opens a
``LocalCore`` and serves it on the home's Unix socket; any other process gets a ``RemoteCore``
connected to the owner's socket instead of a ``home_locked`` error.

When that owner leaves (a closed agent session, a short-lived CLI that happened to own the home,
a crash), the ``RemoteCore`` goes on: its transport failure calls ``find_or_own`` again, the same
path that opened it, within ``OWNER_SOCKET_WAIT_S``. Either another process took the home
meanwhile (connect to it), or this process takes it over: it opens the engine in-process, as it
would have had it come first, serves it on the home's socket for the others, and its own
``RemoteCore`` moves to that socket. ``open_core`` callers embed the engine on purpose (their
config overrides and embedder apply to it) and expect no detached service to be started behind
their back, so taking over beats starting ``stratamem serve`` the way the host kit's thin client
does; the CLI and the hosts use that client and are unchanged. The call that found the owner gone
is resent on the new channel: what the old owner journaled is replayed by the new one and its turn
key (``RemoteCore`` gives a key-less ``turn_end`` one) makes the resend return the first
acknowledgement, so nothing acknowledged is lost or doubled. A recall with a deadline does not
wait for the hand-over past it (``stratamem.contract.reconnect``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.client import DEFAULT_START_BUDGET_S, live_socket, owner_record
from stratamem.core.telemetry import get_logger

_log = get_logger("server")

#: How long an opener waits for the home's owner to serve its socket: an owner takes the lock
#: first and serves only once its engine is open (seconds on a loaded machine), the same budget a
#: host's client gives a service it starts. A ``RemoteCore`` whose owner left gets as long to find
#: the next owner or become it.
OWNER_SOCKET_WAIT_S = DEFAULT_START_BUDGET_S
#: Drain bound when an embedded owner closes its socket server.
EMBEDDED_DRAIN_S = 2.0
_POLL_S = 0.05


async def owner_socket(home: Path, err: StratamemError, give_up: float) -> str | None:
    """The socket of the owner named by ``err`` (a ``home_locked``) once it serves; None when the
    home has no owner any more (it left: the caller owns the home itself). Re-raises ``err`` when
    the owner is this process, and raises ``home_locked`` when the owner still has not served by
    ``give_up`` (``time.monotonic()``) or is another user's or version's service."""
    if err.details.get("pid") == os.getpid():
        raise err  # a second open in the owning process: use the core you already have
    while True:
        if await asyncio.to_thread(owner_record, home) is None:
            return None
        sock = await asyncio.to_thread(live_socket, home)
        if sock:
            return sock
        if time.monotonic() >= give_up:
            raise StratamemError(
                ErrorCode.HOME_LOCKED,
                f"{err.message}; it has not served its socket within {OWNER_SOCKET_WAIT_S:.0f}s",
                err.details,
            )
        await asyncio.sleep(_POLL_S)


async def find_or_own(
    home: Path, open_engine: Callable[[], Awaitable[Any]]
) -> tuple[Any, str | None]:
    """``(engine, None)`` when this process takes the home's lock, else ``(None, owner's socket)``.

    An owner already serving is reached at once, without importing the engine. Two processes at once both try to own the home: the loser waits for the winner to serve (it
    takes the lock before its engine is open) and connects; if the owner leaves meanwhile, the
    loser tries to own the home again, so neither sees ``home_locked`` within
    ``OWNER_SOCKET_WAIT_S``."""
    give_up = time.monotonic() + OWNER_SOCKET_WAIT_S
    while True:
        record = await asyncio.to_thread(owner_record, home)
        if record is not None and record.get("pid") != os.getpid():
            # an owner serving now: connect without importing the engine (LanceDB's import alone
            # took 9 of a second process's 20 s on a loaded machine)
            sock = await asyncio.to_thread(live_socket, home)
            if sock:
                return None, sock
        try:
            return await open_engine(), None
        except StratamemError as err:
            if err.code != ErrorCode.HOME_LOCKED:
                raise
            sock = await owner_socket(home, err, give_up)
            if sock is not None:
                return None, sock
            if time.monotonic() >= give_up:
                raise


@contextlib.asynccontextmanager
async def open_or_connect(
    home: str | os.PathLike[str] | None = None,
    *,
    embedder: Any = None,
    host: str | None = None,
    serve_socket: bool = True,
    **config_overrides: Any,
) -> AsyncIterator[Any]:
    """Yield the home's core: a served ``LocalCore`` when we own it, else a ``RemoteCore`` that
    follows the home's owner (and takes the home over when nobody else does)."""
    from stratamem.core.home import resolve_home

    path = resolve_home(home, host=host)

    async def open_engine() -> Any:
        # only when we may own it, and off the event loop: LanceDB's import alone takes seconds on
        # a loaded machine, while the loop serves this process's other calls (a hand-over's
        # takeover runs beside calls that must keep their deadline)
        assemble = await asyncio.to_thread(
            importlib.import_module, "stratamem.core.engine.assemble"
        )
        return await assemble.open_local_core(path, embedder=embedder, **config_overrides)

    core, sock = await find_or_own(path, open_engine)
    if core is None:
        assert sock is not None
        async with _following_owner(path, sock, open_engine) as remote:
            yield remote
        return
    service = await _serve_embedded(core) if serve_socket else None
    try:
        yield core
    finally:
        await _close_owned(core, service)


@contextlib.asynccontextmanager
async def _following_owner(
    path: Path, sock: str, open_engine: Callable[[], Awaitable[Any]]
) -> AsyncIterator[Any]:
    """A ``RemoteCore`` on ``sock`` whose transport failures find (or become) the next owner."""
    from stratamem.contract.remote import RemoteCore

    owned: list[tuple[Any, Any]] = []  # (engine, service) once this process took the home over
    # a takeover runs under ``taking``; closing waits for one under way, then stops what it opened
    # (else an engine opened after the close would hold the home until this process exits)
    taking = asyncio.Lock()
    closed = False

    async def reconnect() -> str:
        async with taking:
            if closed:
                raise StratamemError(ErrorCode.ALREADY_SHUT_DOWN, "this core has been closed")
            if owned:  # ours already: its socket (a transient failure on our own channel)
                return f"unix:{owned[0][1].socket_path}"
            core, found = await find_or_own(path, open_engine)
            if core is None:
                _log.info("server.owner_moved", socket=found)
                return f"unix:{found}"
            try:
                service = await _serve_embedded(core)
            except BaseException:
                await core.shutdown()
                raise
            if service is None or service.socket_path is None:
                await _close_owned(core, service)  # our client cannot reach it: let another own it
                raise StratamemError(
                    ErrorCode.TRANSPORT_CLOSED,
                    f"took over home {path} but could not serve its socket",
                    {"home": str(path)},
                )
            owned.append((core, service))
            _log.info("server.took_over", home=str(path), socket=str(service.socket_path))
            return f"unix:{service.socket_path}"

    remote = RemoteCore(f"unix:{sock}", reconnect=reconnect)
    try:
        yield remote
    finally:
        closed = True
        try:
            await remote.shutdown()
        finally:
            async with taking:
                for core, service in owned:
                    await _close_owned(core, service)


async def _close_owned(core: Any, service: Any) -> None:
    """Stop serving (in-flight calls drain), then shut the engine down (the journal drains)."""
    try:
        if service is not None:
            await service.stop(EMBEDDED_DRAIN_S)
    finally:
        await core.shutdown()


async def _serve_embedded(core: Any) -> Any:
    from stratamem.core.server.app import ServeOptions, Service

    service = Service(core, ServeOptions(host_services=False))
    try:
        return await service.start()
    except Exception as exc:  # serving is a courtesy to other processes; the owner still works
        _log.warning("server.embedded_failed", error=str(exc))
        with contextlib.suppress(Exception):
            await service.stop(0)
        return None
