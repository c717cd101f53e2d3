"""Whole-file writes: threads of one process replacing the same file do not trip over each
other's temp file, and the file always holds one writer's whole content with the mode asked."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from stratamem.contract.hostkit.files import create_whole, write_atomic


def test_threads_replacing_one_file_each_write_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "run" / "start.json"
    contents = [f'{{"writer": {i}, "pad": "{"x" * 4096}"}}' for i in range(4)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(contents))

    def writer(text: str) -> None:
        start.wait()
        try:
            for _ in range(200):
                write_atomic(path, text, mode=0o640)
        except BaseException as exc:  # a shared temp name: replace() finds it gone
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(c,)) for c in contents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert path.read_text() in contents
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in path.parent.iterdir()] == ["start.json"]  # no temp file left


def test_create_whole_keeps_the_first_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    assert create_whole(path, "first: 1\n") is True
    assert create_whole(path, "second: 2\n") is False
    assert path.read_text() == "first: 1\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
