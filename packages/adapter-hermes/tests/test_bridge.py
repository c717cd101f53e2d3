"""A bridge closed while it was still opening leaves the spool to the next bridge on the home."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from stratamem.hermes import bridge as bridges


def test_a_bridge_closed_while_opening_runs_no_on_open_work(hermes_home: Path) -> None:
    home = hermes_home / "stratamem"
    home.mkdir()
    (home / "config.yaml").write_text("embedding:\n  provider: none\n")
    gate = threading.Event()
    opened: list[str] = []

    def slow_open(path: Path, **overrides: Any) -> Any:
        gate.wait(60)  # the service is still starting on a loaded machine
        return bridges.default_opener(path, **overrides)

    old = bridges.acquire(home, opener=slow_open)
    old.add_on_open(lambda core: opened.append("old"))  # after the bridge's own spool replay
    opening = old.warm()
    bridges.release(old, timeout=0.1)  # its provider shut down before the service answered
    gate.set()

    new = bridges.acquire(home)
    new.add_on_open(lambda core: opened.append("new"))
    try:
        new.warm().result(120)
        opening.result(120)
        # the closed bridge replayed nothing: a replay there would race the new bridge's first
        # recall (it found the spooled turns claimed and recalled without them)
        assert opened == ["new"]
    finally:
        bridges.release(new)
