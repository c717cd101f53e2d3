"""A real LocalCore (SQLite + LanceDB in a temp dir, no embedder) and the OpenClaw host over it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stratamem.core import LocalCore, open_core
from stratamem.openclaw.host import OpenClawHost


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[LocalCore]:
    async with open_core(tmp_path / "home", embedding__provider="none") as c:
        yield c


@pytest.fixture
def host(core: LocalCore) -> OpenClawHost:
    return OpenClawHost(core)
