"""Fixtures for the DSH end-to-end tests: a real ``stratamem serve`` on a temp home, and the Node
harness installed once (outside the repo) from the npm registry."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
HARNESS_FILES = ("package.json", "fake-dsh.mjs", "dsh.test.mjs", "child.test.mjs")


def stratamem_command() -> str:
    exe = Path(sys.executable).parent / "stratamem"
    return str(exe) if exe.exists() else "stratamem"


def start_server(home: Path, timeout_s: float = 120.0) -> subprocess.Popen[str]:
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "config.yaml"
    if not cfg.exists():
        cfg.write_text("embedding:\n  provider: none\n", encoding="utf-8")
    proc = subprocess.Popen(
        [stratamem_command(), "serve", "--home", str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            break
        try:
            if json.loads(line).get("ready"):
                return proc
        except ValueError:
            continue
    proc.kill()
    raise RuntimeError(f"stratamem serve did not become ready (rc={proc.poll()})")


def stop_server(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="session")
def harness_dir() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the DSH harness")
    digest = hashlib.sha256((HERE / "package.json").read_bytes()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    target = cache / "stratamem" / f"dsh-harness-{digest}"
    target.mkdir(parents=True, exist_ok=True)
    for name in HARNESS_FILES:
        shutil.copy2(HERE / name, target / name)
    if not (target / "node_modules" / "cordis4").exists():
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=target,
            check=True,
            timeout=600,
        )
    return target


@pytest.fixture
def served_home(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    home = tmp_path / "home"
    proc = start_server(home)
    try:
        yield home, proc
    finally:
        stop_server(proc)
