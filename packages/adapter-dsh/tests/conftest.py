"""Fixtures: a real LocalCore (SQLite + LanceDB in a temp dir, no embedder) and the DSH bridge over it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from dsh_fakes import FakeDsh, GatedCore

from stratamem.core import LocalCore, open_core
from stratamem.dsh.bridge import DshBridge


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[LocalCore]:
    async with open_core(tmp_path / "home", embedding__provider="none") as c:
        yield c


@pytest.fixture
async def gated(core: LocalCore) -> GatedCore:
    return GatedCore(core)


@pytest.fixture
async def bridge(gated: GatedCore, core: LocalCore) -> AsyncIterator[DshBridge]:
    b = DshBridge(gated, core.home, poll_interval_s=0)  # type: ignore[arg-type]
    b.start()
    yield b
    for gate in gated.gates.values():
        gate.set()
    gated.delays.clear()
    await b.stop()
    b.queues.cancel()


@pytest.fixture
def dsh(bridge: DshBridge, core: LocalCore) -> FakeDsh:
    return FakeDsh(bridge, core.home)
