"""Shared fixtures: a throwaway HERMES_HOME (and HOME) per test; Hermes reads them at call time."""

from __future__ import annotations

import contextlib
import json
import time
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
    """The provider starts the home's resident service detached; stop it after each test.

    A test may end before the service it started owns its home (a loaded machine boots it in
    seconds): wait for every recorded start to own the home or exit, else it outlives the test
    until its idle exit (15 min, ~350 MB each) and loads the machine for the tests after it.
    """
    yield
    from stratamem.contract.hostkit.client import owner_record, stop_service
    from stratamem.contract.hostkit.home import pid_alive

    for start in tmp_path.rglob("run/start.json"):
        home = start.parent.parent
        with contextlib.suppress(Exception):
            pid = int(json.loads(start.read_text(encoding="utf-8"))["pid"])
            give_up = time.monotonic() + 60
            while owner_record(home) is None and pid_alive(pid) and time.monotonic() < give_up:
                time.sleep(0.05)
    for lock in tmp_path.rglob("owner.lock"):
        with contextlib.suppress(Exception):
            stop_service(lock.parent, 20)
