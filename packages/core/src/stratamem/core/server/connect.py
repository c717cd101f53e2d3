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
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.telemetry import get_logger

_log = get_logger("server")

#: How long a client waits for a freshly started owner to advertise its socket.
OWNER_SOCKET_WAIT_S = 5.0
#: Drain bound when an embedded owner closes its socket server.
EMBEDDED_DRAIN_S = 2.0


async def owner_socket(home: Path, err: StratamemError, wait_s: float = OWNER_SOCKET_WAIT_S) -> str:
    """The owner's socket path; re-raises ``err`` when the owner is this process or never serves."""
    from stratamem.core.storage.lock import read_owner

    pid = err.details.get("pid")
    if pid == os.getpid():
        raise err  # a second open in the owning process: use the core you already have
    sock = err.details.get("socket")
    give_up = time.monotonic() + wait_s
    while not sock and time.monotonic() < give_up:
        await asyncio.sleep(0.05)
        owner = await asyncio.to_thread(read_owner, home)
        if owner is None:
            raise StratamemError(
                ErrorCode.HOME_LOCKED, f"home {home} changed owner while connecting; retry"
            )
        sock = owner.get("socket")
    if not sock:
        raise err
    return str(sock)


@contextlib.asynccontextmanager
async def open_or_connect(
    home: str | os.PathLike[str] | None = None,
    *,
    embedder: Any = None,
    host: str | None = None,
    serve_socket: bool = True,
    **config_overrides: Any,
) -> AsyncIterator[Any]:
    """Yield the home's core: a served ``LocalCore`` when we own it, else a ``RemoteCore``."""
    from stratamem.contract.remote import RemoteCore
    from stratamem.core.home import resolve_home

    path = resolve_home(home, host=host)
    try:
        core = await open_local_core(path, embedder=embedder, **config_overrides)
    except StratamemError as err:
        if err.code != ErrorCode.HOME_LOCKED:
            raise
        sock = await owner_socket(path, err)
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
