"""Helpers of the DSH end-to-end tests: start and stop a real ``stratamem serve`` on a home."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path


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
