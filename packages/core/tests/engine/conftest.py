"""Engine modules are tested through a real core over a tmp home (SQLite + LanceDB + journal):
``svc`` is that core's ``EngineServices``, the object every engine function takes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.dtos import Namespace
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.engine.services import EngineServices
from stratamem.core.local import LocalCore

ALICE = Namespace(agent_kind="hermes", profile_id="alice")
BOB = Namespace(agent_kind="hermes", profile_id="bob")


def now() -> int:
    return int(time.time() * 1000)


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The shipped local embedder, loaded once (it is read-only and thread-safe)."""
    from stratamem.core.embedding import load_embedder

    return load_embedder({"provider": "local"})


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[LocalCore]:
    c = await open_local_core(tmp_path, embedding__provider="none")
    try:
        yield c
    finally:
        await c.shutdown()


@pytest.fixture
async def svc(core: LocalCore) -> EngineServices:
    return core.services
