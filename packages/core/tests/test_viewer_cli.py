"""``stratamem serve`` starts the viewer and records its URL; ``stratamem open`` prints only that URL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from stratamem.core.viewer.command import DEFAULT_PORT, HOST_PORTS, choose_bind, host_of_home

STRATAMEM = [sys.executable, "-m", "stratamem.core.cli"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("STRATAMEM_HOME", None)
    return env


def test_open_without_a_running_server_exits_1_with_a_clear_message(tmp_path: Path) -> None:
    """It names `stratamem start` (which returns once the service answers), not `serve`, which
    would hold the terminal; a home that does not exist is `home_not_found`, as for `search`."""
    (tmp_path / "config.yaml").write_text("version: 1\n")
    out = subprocess.run(
        [*STRATAMEM, "open", "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert out.returncode == 1
    assert out.stdout == ""
    assert "no service runs" in out.stderr
    assert f"stratamem start --home {tmp_path}" in out.stderr
    typo = tmp_path / "no-such-home"
    missing = subprocess.run(
        [*STRATAMEM, "open", "--home", str(typo)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert missing.returncode == 2 and f"no Stratamem home at {typo}" in missing.stderr
    assert not typo.exists()


def test_serve_starts_the_viewer_and_open_prints_its_url(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("version: 1\nembedding:\n  provider: none\n")
    proc = subprocess.Popen(
        [*STRATAMEM, "serve", "--home", str(home), "--viewer", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        url = ready["viewer_url"]
        assert url.startswith("http://127.0.0.1:")
        serve_json = json.loads((home / "run" / "serve.json").read_text())
        assert serve_json["viewer_url"] == url
        opened = subprocess.run(
            [*STRATAMEM, "open", "--home", str(home)],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
        assert opened.returncode == 0, opened.stderr
        assert opened.stdout == url + "\n"
        with urllib.request.urlopen(url + "api/system", timeout=30) as resp:
            assert json.loads(resp.read())["paths"]["home"] == str(home)
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert b'<div id="app"' in resp.read()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0
    assert not (home / "run" / "serve.json").exists()


def test_the_viewer_port_follows_the_host_of_the_home(tmp_path: Path) -> None:
    env = {"HERMES_HOME": str(tmp_path / "hh")}
    assert host_of_home(tmp_path / "hh" / "stratamem", env) == "hermes"
    assert host_of_home(Path("/x/.openclaw/stratamem"), {}) == "openclaw"
    assert host_of_home(Path("/x/.dsh/stratamem"), {}) == "dsh"
    openclaw_home = tmp_path / ".openclaw" / "stratamem"
    openclaw_home.mkdir(parents=True)
    assert choose_bind(openclaw_home, None) == ("127.0.0.1", HOST_PORTS["openclaw"], False)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert choose_bind(plain, None) == ("127.0.0.1", DEFAULT_PORT, False)
    assert choose_bind(plain, ":0") == ("127.0.0.1", 0, True)
    assert choose_bind(plain, "off") is None
    (plain / "config.yaml").write_text("viewer:\n  port: 19123\n")
    assert choose_bind(plain, None) == ("127.0.0.1", 19123, True)


def test_viewer_traffic_keeps_the_resident_service_from_idling_out(tmp_path: Path) -> None:
    """A person on the viewer (page requests, then only the page's open ``/events`` stream) is
    activity: ``server.idle_exit_s`` does not stop the service under them; it exits once they leave."""
    import time

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "version: 1\nembedding:\n  provider: none\nserver:\n  idle_exit_s: 2\n"
    )
    with (tmp_path / "serve.err").open("w") as err:
        proc = subprocess.Popen(
            [*STRATAMEM, "serve", "--home", str(home), "--viewer", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=_env(),
        )
    try:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["viewer_url"]
        until = time.monotonic() + 6  # three idle windows of nothing but viewer requests
        while time.monotonic() < until:
            with urllib.request.urlopen(url + "api/traces", timeout=60) as resp:
                assert resp.status == 200
            time.sleep(0.25)
        assert proc.poll() is None, "the service idled out while the viewer was in use"
        with urllib.request.urlopen(url + "events", timeout=60) as stream:
            assert stream.readline().startswith(b"retry:")  # the stream is open
            time.sleep(5)  # only the open stream for two and a half idle windows
            assert proc.poll() is None, "the service idled out under an open viewer page"
        proc.wait(120)  # the page closed: nothing is in flight, the idle exit follows
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    assert proc.returncode == 0
    assert not (home / "run" / "serve.json").exists()
