"""Shared fixtures: a throwaway HERMES_HOME (and HOME) per test; Hermes reads them at call time."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    hh = home / ".hermes"
    hh.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(hh))
    monkeypatch.delenv("STRATAMEM_HOME", raising=False)
    monkeypatch.setenv("HERMES_DISABLE_LAZY_INSTALLS", "1")
    monkeypatch.setenv("TIRITH_ENABLED", "false")
    return hh


@pytest.fixture(autouse=True)
def _stop_started_services(tmp_path: Path) -> Iterator[None]:
    """The provider starts the home's resident service detached; stop it after each test."""
    yield
    from stratamem.contract.hostkit.client import stop_service

    for lock in tmp_path.rglob("owner.lock"):
        with contextlib.suppress(Exception):
            stop_service(lock.parent, 20)
