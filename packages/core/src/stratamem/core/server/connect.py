"""One owner per home, shared transparently: own the home (and serve its socket), or reach its owner.

``open_or_connect`` is what ``open_core`` uses: a process that takes the home's lock opens a
``LocalCore`` and serves it on the home's Unix socket; any other process gets a ``RemoteCore``
connected to the owner's socket instead of a ``home_locked`` error.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.client import DEFAULT_START_BUDGET_S, live_socket, owner_record
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.telemetry import get_logger

_log = get_logger("server")

#: How long an opener waits for the home's owner to serve its socket: an owner takes the lock
#: first and serves only once its engine is open (seconds on a loaded machine), the same budget a
#: host's client gives a service it starts.
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


@contextlib.asynccontextmanager
async def open_or_connect(
    home: str | os.PathLike[str] | None = None,
    *,
    embedder: Any = None,
    host: str | None = None,
    serve_socket: bool = True,
    **config_overrides: Any,
) -> AsyncIterator[Any]:
    """Yield the home's core: a served ``LocalCore`` when we own it, else a ``RemoteCore``.

    Two processes opening one home at once both try to own it: the loser waits for the winner to
    serve (it takes the lock before its engine is open) and connects; if the owner leaves
    meanwhile, the loser tries to own the home again, so neither sees ``home_locked``.
    """
    from stratamem.contract.remote import RemoteCore
    from stratamem.core.home import resolve_home

    path = resolve_home(home, host=host)
    give_up = time.monotonic() + OWNER_SOCKET_WAIT_S
    core: Any = None
    sock: str | None = None
    while core is None and sock is None:
        try:
            core = await open_local_core(path, embedder=embedder, **config_overrides)
        except StratamemError as err:
            if err.code != ErrorCode.HOME_LOCKED:
                raise
            sock = await owner_socket(path, err, give_up)
            if sock is None and time.monotonic() >= give_up:
                raise
    if core is None:
        remote = RemoteCore(f"unix:{sock}")
        try:
            yield remote
        finally:
            await remote.shutdown()
        return
    service = None
    try:
        if serve_socket:
            service = await _serve_embedded(core)
        yield core
    finally:
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
