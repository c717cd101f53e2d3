"""The real Cordis plugin in a real Cordis context (3.18 and upstream 4 rc) against `stratamem serve`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from dsh_e2e_support import stratamem_command


def run_node(harness: Path, files: list[str], env: dict[str, str], cordis: str) -> str:
    proc = subprocess.run(
        ["node", "--test", "--test-reporter=spec", *files],
        cwd=harness,
        env={**os.environ, **env, "DSH_CORDIS": cordis},
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(proc.stdout[-6000:])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("cordis", ["3", "4"])
def test_plugin_in_real_cordis_against_a_running_service(
    harness_dir: Path,
    plugin_entry_installed: Path,
    served_home: tuple[Path, subprocess.Popen[str]],
    tmp_path: Path,
    cordis: str,
) -> None:
    home, proc = served_home
    env = {
        "STRATAMEM_DSH_PLUGIN": str(plugin_entry_installed),
        "STRATAMEM_DSH_HOME": str(home),
        "STRATAMEM_DSH_SERVER_PID": str(proc.pid),
        "STRATAMEM_DSH_COMMAND": stratamem_command(),
        "STRATAMEM_DSH_SCRATCH": str(tmp_path),
    }
    out = run_node(harness_dir, ["dsh.test.mjs"], env, cordis)
    assert "STRATAMEM_DSH_METRICS" in out


def test_plugin_starts_the_resident_service_and_leaves_it_running(
    harness_dir: Path, plugin_entry_installed: Path, tmp_path: Path
) -> None:
    env = {
        "STRATAMEM_DSH_PLUGIN": str(plugin_entry_installed),
        "STRATAMEM_DSH_COMMAND": stratamem_command(),
        "STRATAMEM_DSH_SCRATCH": str(tmp_path),
    }
    run_node(harness_dir, ["child.test.mjs"], env, "4")
