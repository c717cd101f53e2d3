"""``stratamem.core.entry_points`` finds what ``importlib.metadata`` finds, in the same order, without
importing it (~20 ms of every fresh ``stratamem`` process: bench/results/startup-session19.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GROUPS = ["stratamem", "console_scripts", "pytest11", "distutils.commands"]

_COMPARE = """
import json, sys
from stratamem.core import entry_points
from stratamem.core.plugins import get_plugin_manager
if sys.argv[2] == "load":
    get_plugin_manager()
lean = "importlib.metadata" not in sys.modules
import importlib.metadata as m
out = {"lean": lean, "groups": {}}
for group in json.loads(sys.argv[1]):
    ref = [(ep.name, ep.value) for d in m.distributions() for ep in d.entry_points if ep.group == group]
    out["groups"][group] = [ref, entry_points.read(group)]
print(json.dumps(out))
"""


def _compare(extra_path: Path | None = None, *, load: bool = True) -> dict:
    env = None
    if extra_path is not None:
        import os

        env = {**os.environ, "PYTHONPATH": str(extra_path)}
    done = subprocess.run(
        [sys.executable, "-c", _COMPARE, json.dumps(GROUPS), "load" if load else "read"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_installed_entry_points_are_read_as_importlib_metadata_reads_them() -> None:
    data = _compare()
    assert data["lean"], "loading the plugins imported importlib.metadata"
    assert data["groups"]["console_scripts"][0], "no console scripts: nothing compared"
    for group, (ref, ours) in data["groups"].items():
        assert ours == [list(p) for p in ref], group


def test_a_distribution_on_pythonpath_with_comments_and_other_sections(tmp_path: Path) -> None:
    """Parsing per ``importlib.metadata``: comments, blank lines, spaces, other groups, an egg-info
    beside a dist-info, an ``.egg-info`` file (no entry points), names differing in case and
    separators (grouped by normalized name)."""
    a = tmp_path / "Zeta_Plugin-1.0.dist-info"
    a.mkdir()
    (a / "entry_points.txt").write_text(
        "# a comment\n\n[console_scripts]\nzeta = zeta.cli:main\n\n"
        "[stratamem]\n  zeta   =   zeta.plugin  \n# zz = no\nzeta2 = zeta.plugin:Obj.attr [extra]\n"
    )
    b = tmp_path / "alpha.plugin-2.0.egg-info"
    b.mkdir()
    (b / "entry_points.txt").write_text("[stratamem]\nalpha = alpha.plugin\n")
    (tmp_path / "old-0.1.egg-info").write_text("Metadata-Version: 1.0\nName: old\n")
    c = tmp_path / "zeta.plugin-0.9.dist-info"
    c.mkdir()
    (c / "entry_points.txt").write_text("[stratamem]\nzeta = other.plugin\n")
    data = _compare(tmp_path, load=False)  # (the modules they name do not exist)
    for group, (ref, ours) in data["groups"].items():
        assert ours == [list(p) for p in ref], group
    names = [n for n, _ in data["groups"]["stratamem"][1]]
    assert {"zeta", "zeta2", "alpha"} <= set(names)


def test_a_zip_on_the_path_falls_back_to_importlib_metadata(tmp_path: Path) -> None:
    import zipfile

    from stratamem.core import entry_points

    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zz_zip-1.0.dist-info/entry_points.txt", "[stratamem]\nzz = zz.plugin\n")
    sys.path.append(str(archive))
    try:
        assert entry_points.read("stratamem") is None
    finally:
        sys.path.remove(str(archive))
    assert entry_points.read("stratamem") is not None


def test_load_resolves_module_and_attributes() -> None:
    from stratamem.core import entry_points

    assert entry_points.load("stratamem.core.cli:Commands.add_command").__name__ == "add_command"
    assert entry_points.load("stratamem.core.plugins").__name__ == "stratamem.core.plugins"
