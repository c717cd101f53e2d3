"""Find every CPython of the test matrix (3.11-3.13), pyenv's versions included.

pyenv keeps its versions off PATH (only the global one answers through its shims), and tox-uv with
``uv_python_preference = only-system`` finds interpreters on PATH only. ``link_pythons`` puts one
``python3.X`` link per found version in a private directory that ``toxfile.py`` puts first on PATH,
so no other command (``python3``, ``pip``) changes meaning.

Run as a script (``.ci/run`` does) it prints what it found and exits 1 naming any missing version.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

MATRIX = ("3.11", "3.12", "3.13")
_RELEASE = re.compile(r"^(3\.\d+)\.(\d+)$")  # 3.12.1, not 3.13.0t or 3.12-dev


def pyenv_root() -> Path:
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def pyenv_pythons(root: Path | None = None) -> dict[str, Path]:
    """minor -> the newest pyenv-installed release's interpreter, for the matrix's minors."""
    versions = (root or pyenv_root()) / "versions"
    best: dict[str, tuple[int, Path]] = {}
    if not versions.is_dir():
        return {}
    for d in versions.iterdir():
        m = _RELEASE.match(d.name)
        exe = d / "bin" / f"python{m.group(1)}" if m else None
        if m is None or exe is None or m.group(1) not in MATRIX or not os.access(exe, os.X_OK):
            continue
        patch = int(m.group(2))
        if m.group(1) not in best or patch > best[m.group(1)][0]:
            best[m.group(1)] = (patch, exe)
    return {minor: exe for minor, (_, exe) in best.items()}


def _runs(exe: str) -> bool:
    """A pyenv shim exists for every version pyenv knows, but fails unless that version is selected."""
    import subprocess

    try:
        return subprocess.run([exe, "-c", "pass"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def link_pythons(link_dir: Path, root: Path | None = None) -> dict[str, Path]:
    """Link ``python3.X`` in ``link_dir`` to each pyenv version of the matrix; returns them."""
    found = pyenv_pythons(root)
    link_dir.mkdir(parents=True, exist_ok=True)
    for minor in MATRIX:  # a version uninstalled since the last run must not linger
        if minor not in found:
            (link_dir / f"python{minor}").unlink(missing_ok=True)
    for minor, exe in found.items():
        link = link_dir / f"python{minor}"
        if link.is_symlink() and Path(os.readlink(link)) == exe:
            continue
        tmp = link_dir / f".python{minor}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(exe)
        os.replace(tmp, link)  # atomic: parallel tox runs never see a half-made link
    return found


def available(root: Path | None = None) -> dict[str, str | None]:
    """minor -> an interpreter that runs (pyenv's first, else PATH's), or None."""
    found = pyenv_pythons(root)
    out: dict[str, str | None] = {}
    for minor in MATRIX:
        if minor in found:
            out[minor] = str(found[minor])
            continue
        exe = shutil.which(f"python{minor}")
        out[minor] = exe if exe and _runs(exe) else None
    return out


def main() -> int:
    got = available()
    missing = [minor for minor, exe in got.items() if exe is None]
    for minor, exe in got.items():
        print(f"python{minor}: {exe or 'MISSING'}")
    if missing:
        print(
            f"error: Python {', '.join(missing)} not found on PATH nor in {pyenv_root()}/versions; "
            f"the matrix needs every one of {', '.join(MATRIX)} "
            f"(install with e.g. `pyenv install {missing[0]}`)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
