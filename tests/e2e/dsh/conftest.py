"""Fixtures for the DSH end-to-end tests: a real ``stratamem serve`` on a temp home, and the Node
harness installed once (outside the repo) from the npm registry."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from dsh_e2e_support import start_server, stop_server

HERE = Path(__file__).parent
HARNESS_FILES = ("package.json", "fake-dsh.mjs", "dsh.test.mjs", "child.test.mjs")


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


@pytest.fixture(scope="session")
def plugin_entry_installed(harness_dir: Path) -> Path:
    """The plugin as `stratamem dsh install` lays it out (JS files, dsh.desc, @grpc/grpc-js from
    npm), in a cache dir outside the repo: npm runs once per package.json."""
    from stratamem.dsh.install import install_plugin, plugin_entry, plugin_files

    digest = hashlib.sha256(plugin_files()["package.json"]).hexdigest()[:12]
    target = harness_dir.parent / f"dsh-plugin-{digest}"
    install_plugin(target)
    return target / plugin_entry().name


@pytest.fixture
def served_home(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    home = tmp_path / "home"
    proc = start_server(home)
    try:
        yield home, proc
    finally:
        stop_server(proc)
