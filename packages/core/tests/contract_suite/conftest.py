"""ONE parametrized fixture: the same home served in-process (``LocalCore``) or over gRPC (``RemoteCore``
on the home's real Unix socket). Every contract test runs against both with identical assertions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.remote import RemoteCore
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service


@pytest.fixture(params=["local", "remote"])
async def any_core(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    service = await Service(core).start()
    remote = RemoteCore(f"unix:{service.socket_path}")
    try:
        yield core if request.param == "local" else remote
    finally:
        await remote.shutdown()
        await service.stop(1.0)
        await core.shutdown()
