"""``scripts/build_wheelhouse.py`` says what it is doing while it builds (it used to be silent for
half a minute): one progress line per package on stderr, artifact names alone on stdout."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_each_package_build_is_announced_and_timed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location(
        "build_wheelhouse", REPO / "scripts" / "build_wheelhouse.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    built = script.build(tmp_path, ("contract",))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "build_wheelhouse: [1/1] building contract (sdist, then the wheel from it) ..."
    assert err[1].startswith("build_wheelhouse: [1/1] contract done in ") and err[1].endswith(" s")
    assert sorted(p.suffix for p in built) == [".gz", ".whl"]
