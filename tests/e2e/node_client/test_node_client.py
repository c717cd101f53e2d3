"""A non-Python client proves the contract: Node.js (@grpc/grpc-js + @grpc/proto-loader from npm,
the repo's proto/ files) talks to a real ``stratamem serve`` over its Unix socket and over TCP."""

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
REPO = HERE.parents[2]
PROTO = REPO / "proto"


def _deps_dir() -> Path:
    """npm install once per package.json into a cache dir outside the repo."""
    digest = hashlib.sha256((HERE / "package.json").read_bytes()).hexdigest()[:12]
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "stratamem-e2e"
    target = base / f"node_client-{digest}"
    if not (target / "node_modules" / "@grpc" / "grpc-js").exists():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "package.json", target / "package.json")
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent"],
            cwd=target,
            check=True,
            timeout=600,
        )
    return target


@pytest.fixture(scope="module")
def node_deps() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm not installed (scripts/ci-system-deps.sh installs them)")
    return _deps_dir()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Path, dict[str, object]]]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "embedding:\n  provider: none\nserver:\n  tokens:\n    node-token: ['node-e2e/*']\n",
        encoding="utf-8",
    )
    exe = Path(sys.executable).parent / "stratamem"
    proc = subprocess.Popen(
        [
            str(exe) if exe.exists() else "stratamem",
            "serve",
            "--home",
            str(home),
            "--listen",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    info: dict[str, object] = {}
    end = time.monotonic() + 120
    while time.monotonic() < end and not info:
        line = proc.stdout.readline()
        if not line:
            break
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if data.get("ready"):
            info = data
    if not info:
        proc.kill()
        pytest.fail("stratamem serve did not become ready")
    try:
        yield home, info
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _run_client(deps: Path, target: str, token: str | None = None) -> dict[str, object]:
    args = ["node", str(HERE / "client.mjs"), str(PROTO), target] + ([token] if token else [])
    out = subprocess.run(
        args,
        env={**os.environ, "NODE_CLIENT_DEPS": str(deps)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _check(result: dict[str, object]) -> None:
    assert result["health"] == {"ok": True, "version": result["health"]["version"]}  # type: ignore[index]
    assert result["session_id"] == "node-s1"
    assert result["trace_id"] and result["trace_id"] in result["search"]  # type: ignore[operator]
    assert result["typedError"] == {"grpc": 5, "code": "session_not_found"}
    types = [e["type"] for e in result["events"]]  # type: ignore[union-attr, index]
    assert "session.opened" in types and "retrieval.triggered" in types
    seqs = [e["seq"] for e in result["events"]]  # type: ignore[union-attr, index]
    assert seqs == sorted(seqs) and len({e["epoch"] for e in result["events"]}) == 1  # type: ignore[union-attr, index]


def test_node_client_over_the_unix_socket(
    node_deps: Path, server: tuple[Path, dict[str, object]]
) -> None:
    _, info = server
    _check(_run_client(node_deps, f"unix:{info['socket']}"))


def test_node_client_over_tcp_with_a_scoped_token(
    node_deps: Path, server: tuple[Path, dict[str, object]]
) -> None:
    _, info = server
    # a token scoped to node-e2e/* streams its own namespace's events (issue 16: not a refusal)
    args_result = _run_client_scoped(node_deps, str(info["tcp"]))
    assert args_result["trace_id"] in args_result["search"]  # type: ignore[operator]
    assert "streamError" not in args_result
    types = [e["type"] for e in args_result["events"]]  # type: ignore[union-attr, index]
    assert "session.opened" in types and "retrieval.triggered" in types


def _run_client_scoped(deps: Path, target: str) -> dict[str, object]:
    return _run_client(deps, target, "node-token")
