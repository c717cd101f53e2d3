"""Preparing a home is safe from many threads at once (a closing and a new client in one host)."""

from __future__ import annotations

import threading
from pathlib import Path

from stratamem.contract.hostkit.home import make_dirs


def test_threads_preparing_one_home_at_once_all_find_it_writable(tmp_path: Path) -> None:
    home = tmp_path / "h"
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def prepare() -> None:
        start.wait()
        for _ in range(200):
            try:
                make_dirs(home, ("run", "logs"), "run")
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=prepare) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert sorted(p.name for p in (home / "run").iterdir()) == []  # no probe left behind
