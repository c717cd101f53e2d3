"""The README's install command gives a user the packages without the developer tools: tox, pytest,
hypothesis, ruff and mypy are the ``dev`` dependency group, which ``uv sync`` includes by default
unless told ``--no-dev`` (the README once said plain ``uv sync --all-packages``)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEV_TOOLS = ("tox", "pytest", "hypothesis", "ruff", "mypy")


def quickstart_sync() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    step = next(s.strip() for s in block.group(1).split("&&") if s.strip().startswith("uv sync"))
    return shlex.split(step)


def test_the_readmes_install_leaves_the_dev_tools_out(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed")
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(UV_PROJECT_ENVIRONMENT=str(venv), UV_PYTHON_DOWNLOADS="never")
    cmd = [uv, *quickstart_sync()[1:], "--quiet"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    site = next(venv.glob("lib/python3.*/site-packages"))
    installed = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert {"stratamem_core", "stratamem_hermes"} <= installed
    assert not installed & set(DEV_TOOLS), sorted(installed & set(DEV_TOOLS))
    assert (venv / "bin" / "stratamem").exists()
