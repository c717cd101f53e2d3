"""``stratamem serve`` as users run it: ready file, 0600 socket, health over the socket, one owner
(exit 3 naming it), non-loopback refusal without a token, SIGTERM drain to exit 0."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

EXE = [sys.executable, "-m", "stratamem.core.cli"]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "STRATAMEM_HOME": str(home), "STRATAMEM_EMBEDDING__PROVIDER": "none"}


def _offline_config(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("embedding:\n  provider: none\n", encoding="utf-8")


def _wait_ready(proc: subprocess.Popen[str], home: Path, timeout: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    ready = home / "run" / "serve.json"
    while time.monotonic() < deadline:
        if ready.exists():
            return json.loads(ready.read_text())  # type: ignore[no-any-return]
        if proc.poll() is not None:
            raise AssertionError(
                f"serve exited early: {proc.returncode} {proc.stderr.read() if proc.stderr else ''}"
            )
        time.sleep(0.05)
    raise AssertionError("serve did not become ready")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, dict[str, object]]]:
    home = tmp_path / "home"
    _offline_config(home)
    proc = subprocess.Popen(
        [*EXE, "serve", "--home", str(home), "--listen", "127.0.0.1:0"],
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        info = _wait_ready(proc, home)
        yield proc, home, info
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def test_serve_lifecycle_ready_file_0600_socket_health_single_owner_and_sigterm_drain(
    served: tuple[subprocess.Popen[str], Path, dict[str, object]],
) -> None:
    proc, home, info = served
    assert info["pid"] == proc.pid
    sock = Path(str(info["socket"]))
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert str(info["tcp"]).startswith("127.0.0.1:") and not str(info["tcp"]).endswith(":0")
    # `stratamem health` reaches the running owner over its socket
    out = subprocess.run(
        [*EXE, "--home", str(home), "health", "--json"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    health = json.loads(out.stdout)
    assert health["ok"] is True and health["home"] == str(home)
    # one owner per home: a second serve exits 3 and names the owner
    second = subprocess.run(
        [*EXE, "serve", "--home", str(home)],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 3
    assert str(proc.pid) in second.stderr
    # SIGTERM drains and exits 0, removing the ready file and the socket
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    assert not (home / "run" / "serve.json").exists()
    assert not sock.exists()


def test_non_loopback_bind_without_a_token_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _offline_config(home)
    out = subprocess.run(
        [*EXE, "serve", "--home", str(home), "--listen", "0.0.0.0:0"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "token" in out.stderr
    assert not (home / "run" / "serve.json").exists()


def test_a_too_long_socket_path_falls_back_to_a_short_temp_path(tmp_path: Path) -> None:
    from stratamem.core.server.sockets import MAX_SOCKET_PATH_BYTES, socket_path_for

    deep = tmp_path / ("d" * 120)
    path = socket_path_for(deep)
    assert len(os.fsencode(str(path))) <= MAX_SOCKET_PATH_BYTES
    assert path == socket_path_for(deep) and path != socket_path_for(tmp_path / ("e" * 120))
    assert socket_path_for(tmp_path) == tmp_path / "run" / "stratamem.sock"


def test_serve_writes_its_logs_and_events_into_the_home(
    served: tuple[subprocess.Popen[str], Path, dict[str, object]],
) -> None:
    proc, home, _info = served
    ingest = home.parent / "one.jsonl"
    ingest.write_text(
        json.dumps({"session": "s", "user": "the kiln runs at 1200C", "assistant": "ok", "ts": 1})
        + "\n"
    )
    done = subprocess.run(
        [*EXE, "ingest", str(ingest), "--no-progress"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    logs = home / "logs"
    app = [json.loads(x) for x in (logs / "stratamem.log").read_text().splitlines() if x]
    assert any(r.get("channel") for r in app)
    events = [json.loads(x) for x in (logs / "events.jsonl").read_text().splitlines() if x]
    assert "turn.captured" in {e.get("type") for e in events}
