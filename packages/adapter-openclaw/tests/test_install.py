"""``stratamem openclaw install|uninstall`` against a temp OpenClaw home (npm skipped here; the e2e runs it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratamem.contract.errors import StratamemError
from stratamem.core.cli import main
from stratamem.openclaw.install import install, uninstall
from stratamem.openclaw.json5edit import parse, to_python

USER = """{
  // keep me
  agents: { defaults: { workspace: "/w" } },
  plugins: { allow: ["x"], slots: { memory: "memory-core" } },
}
"""


def cfg(home: Path) -> dict:
    return to_python(parse((home / "openclaw.json").read_text()))


def test_install_wires_the_plugin_into_the_memory_slot_and_keeps_user_settings(
    tmp_path: Path,
) -> None:
    (tmp_path / "openclaw.json").write_text(USER)
    report = install(tmp_path, run_npm=False)
    c = cfg(tmp_path)
    plugin = tmp_path / "extensions" / "stratamem"
    assert c["plugins"]["allow"] == ["x", "stratamem"]
    assert c["plugins"]["load"]["paths"] == [str(plugin)]
    assert c["plugins"]["slots"]["memory"] == "stratamem"
    entry = c["plugins"]["entries"]["stratamem"]
    assert entry["hooks"] == {"allowConversationAccess": True, "allowPromptInjection": True}
    assert entry["config"]["home"] == str(tmp_path / "stratamem")
    assert Path(entry["config"]["serveCommand"][0]).is_absolute()
    start = entry["config"]["startCommand"]  # the shared thin-client helper, same interpreter
    assert Path(start[0]).is_absolute() and "stratamem.contract.hostkit.client" in start
    assert start[-2:] == ["--home", str(tmp_path / "stratamem")]
    assert c["agents"]["defaults"]["workspace"] == "/w"
    assert "// keep me" in (tmp_path / "openclaw.json").read_text()
    for name in ("index.js", "openclaw.plugin.json", "package.json", "proto/openclaw.desc"):
        assert (plugin / name).is_file()
    manifest = json.loads((plugin / "openclaw.plugin.json").read_text())
    assert manifest["kind"] == "memory"
    tools = manifest["contracts"]["tools"]
    assert tools[:6] == [
        "memos_search",
        "memos_get",
        "memos_timeline",
        "memos_environment",
        "memos_skill_list",
        "memos_skill_get",
    ]
    assert "workspace_recall_search" in tools
    ws_tools = json.loads((plugin / "workspace-tools.json").read_text())
    assert sorted(t["name"] for t in ws_tools) == sorted(tools[6:])
    assert report.changes


def test_a_second_install_changes_nothing(tmp_path: Path) -> None:
    install(tmp_path, run_npm=False)
    before = (tmp_path / "openclaw.json").read_text()
    again = install(tmp_path, run_npm=False)
    assert again.changes == []
    assert (tmp_path / "openclaw.json").read_text() == before


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "openclaw.json").write_text(USER)
    report = install(tmp_path, dry_run=True, run_npm=False)
    assert report.changes and report.dry_run
    assert (tmp_path / "openclaw.json").read_text() == USER
    assert not (tmp_path / "extensions").exists()


def test_uninstall_reverses_install(tmp_path: Path) -> None:
    (tmp_path / "openclaw.json").write_text(USER)
    install(tmp_path, run_npm=False)
    uninstall(tmp_path)
    c = cfg(tmp_path)
    assert c["plugins"]["allow"] == ["x"]
    assert "stratamem" not in c["plugins"].get("entries", {})
    assert c["plugins"]["slots"] == {}
    assert not (tmp_path / "extensions" / "stratamem").exists()
    assert "// keep me" in (tmp_path / "openclaw.json").read_text()


def test_a_broken_openclaw_json_is_rejected_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "openclaw.json").write_text("{ plugins: [ }")
    with pytest.raises(StratamemError) as err:
        install(tmp_path, run_npm=False)
    assert err.value.code.value == "config_invalid"
    assert (tmp_path / "openclaw.json").read_text() == "{ plugins: [ }"
    assert not (tmp_path / "extensions").exists()


def test_the_cli_subcommand_prints_a_json_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["openclaw", "install", "--openclaw-home", str(tmp_path), "--skip-npm", "--dry-run"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["action"] == "install" and out["dry_run"] is True
    assert any("slots.memory" in c for c in out["changes"])


def test_install_and_uninstall_keep_a_private_openclaw_json_private(tmp_path: Path) -> None:
    """openclaw.json holds API keys and the gateway token; under a 022 umask install made a 0600
    file (and its backup) 0644. Through the real entry point, as a user runs it."""
    import subprocess
    import sys

    conf = tmp_path / "openclaw.json"
    conf.write_text('{\n  gateway: { auth: { token: "s3cret" } },\n}\n')
    conf.chmod(0o600)
    exe = str(Path(sys.executable).with_name("stratamem"))
    for action in (["install", "--skip-npm"], ["uninstall"]):
        done = subprocess.run(
            [exe, "openclaw", *action, "--openclaw-home", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=300,
            umask=0o022,
        )
        assert done.returncode == 0, done.stderr
        assert conf.stat().st_mode & 0o777 == 0o600, (action, oct(conf.stat().st_mode))
        assert "s3cret" in conf.read_text()
    backup = tmp_path / "openclaw.json.stratamem.bak"
    assert backup.stat().st_mode & 0o777 == 0o600 and "s3cret" in backup.read_text()
    assert not list(tmp_path.glob("*.stratamem-tmp"))
