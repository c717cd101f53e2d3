"""Shared by every e2e test: hosts start the home's resident service detached (it outlives them by
design), so each test's homes are stopped at teardown instead of waiting for the idle exit."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _stop_started_services(tmp_path: Path) -> Iterator[None]:
    yield
    from stratamem.contract.hostkit.client import stop_service

    for lock in tmp_path.rglob("owner.lock"):
        with contextlib.suppress(Exception):
            stop_service(lock.parent, 20)
