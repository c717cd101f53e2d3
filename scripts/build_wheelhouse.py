"""Build the wheel and the sdist of all five Stratamem packages into one wheelhouse directory.

Each wheel is built from its sdist (``uv build``'s default), which proves every sdist is complete
(the contract's carries ``proto/``). Usage: ``python scripts/build_wheelhouse.py OUT``;
``--with-deps`` also downloads every third-party dependency (pip download, this platform) so that
``pip install --no-index --find-links OUT stratamem-<host>`` works on a machine without an index.
Progress (one line per step, with its time) goes to stderr; the artifact names to stdout.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("contract", "core", "adapter-openclaw", "adapter-hermes", "adapter-dsh")
DIST_PREFIXES = ("stratamem_", "stratamem-")


def uv_binary() -> str:
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except ImportError:
        found = shutil.which("uv")
        if found is None:
            raise SystemExit("uv is required (pip install uv)") from None
        return found


def clean(out: Path) -> None:
    """Drop earlier Stratamem artifacts so a stale wheel can never be installed."""
    for path in out.iterdir():
        if path.is_file() and path.name.startswith(DIST_PREFIXES):
            path.unlink()


def progress(message: str) -> None:
    print(f"build_wheelhouse: {message}", file=sys.stderr, flush=True)


def build(out: Path, packages: tuple[str, ...] = PACKAGES) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    clean(out)
    uv = uv_binary()
    for i, name in enumerate(packages, 1):
        started = time.monotonic()
        progress(f"[{i}/{len(packages)}] building {name} (sdist, then the wheel from it) ...")
        subprocess.run(
            [uv, "build", "--quiet", "--sdist", "--wheel", "--out-dir", str(out)],
            cwd=REPO / "packages" / name,
            check=True,
        )
        progress(f"[{i}/{len(packages)}] {name} done in {time.monotonic() - started:.1f} s")
    return sorted(p for p in out.iterdir() if p.name.startswith(DIST_PREFIXES))


def third_party_requirements(wheels: list[Path]) -> list[str]:
    """Requires-Dist of our wheels that are not our own names (extras excluded)."""
    import zipfile
    from email.parser import Parser

    reqs: set[str] = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            message = Parser().parsestr(z.read(meta).decode("utf-8"))
        for req in message.get_all("Requires-Dist") or []:
            name = req.split(";")[0].strip()
            if "extra ==" in req or name.startswith(DIST_PREFIXES):
                continue
            reqs.add(req)
    return sorted(reqs)


def download_deps(out: Path, wheels: list[Path]) -> None:
    reqs = third_party_requirements(wheels)
    started = time.monotonic()
    progress(f"downloading {len(reqs)} third-party requirements and their dependencies (pip) ...")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--progress-bar",
            "off",
            "--dest",
            str(out),
            *reqs,
        ],
        check=True,
        stdout=sys.stderr,  # pip's "Saved ..." lines are progress too; stdout lists our artifacts
    )
    progress(f"third-party wheels done in {time.monotonic() - started:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path, help="wheelhouse directory")
    parser.add_argument(
        "--with-deps", action="store_true", help="also download third-party wheels (pip)"
    )
    args = parser.parse_args(argv)
    try:
        artifacts = build(args.out.resolve())
        if args.with_deps:
            download_deps(args.out.resolve(), [p for p in artifacts if p.suffix == ".whl"])
    except subprocess.CalledProcessError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    wheels = [p for p in artifacts if p.suffix == ".whl"]
    sdists = [p for p in artifacts if p.name.endswith(".tar.gz")]
    for p in artifacts:
        print(p.name)
    if len(wheels) != len(PACKAGES) or len(sdists) != len(PACKAGES):
        print(f"expected {len(PACKAGES)} wheels and sdists", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
