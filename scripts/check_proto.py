"""Proto drift check: the installed generated code must be exactly what ``proto/`` compiles to.

Compiles every ``.proto`` under ``--proto-root`` with the pinned grpcio-tools into a temporary
directory and compares each file byte for byte with the installed ``stratamem.v1`` /
``stratamem.hosts`` modules. Exit 0 = in step, 1 = drift, 2 = a ``.proto`` does not compile.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")
GENERATED_PACKAGES = ("stratamem/v1", "stratamem/hosts")
PINNED_TOOLS = "1.85.1"


def compile_protos(proto_root: Path, out: Path) -> list[str]:
    """Run protoc on every .proto; returns the relative names. Raises RuntimeError on failure."""
    import grpc_tools
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(proto_root)) for p in proto_root.rglob("*.proto"))
    if not protos:
        raise RuntimeError(f"no .proto files under {proto_root}")
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{proto_root}",
            f"-I{include}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            *protos,
        ]
    )
    if code != 0:
        raise RuntimeError(f"protoc exited with {code}")
    return protos


def installed_root() -> Path:
    """The directory that holds the installed ``stratamem/v1`` (a src/ dir or site-packages)."""
    module = importlib.import_module("stratamem.v1")
    return Path(next(iter(module.__path__))).resolve().parent.parent


def generated_files(root: Path) -> set[str]:
    found: set[str] = set()
    for pkg in GENERATED_PACKAGES:
        base = root / pkg
        if base.is_dir():
            for path in base.rglob("*"):
                if path.is_file() and path.name.endswith(GENERATED_SUFFIXES):
                    found.add(path.relative_to(root).as_posix())
    return found


def compare(expected_root: Path, installed: Path) -> list[str]:
    """Human-readable differences between freshly compiled and installed generated files."""
    problems: list[str] = []
    expected = generated_files(expected_root)
    actual = generated_files(installed)
    for rel in sorted(expected - actual):
        problems.append(f"missing from the installed stubs: {rel}")
    for rel in sorted(actual - expected):
        problems.append(f"installed but not produced by proto/ (stale): {rel}")
    for rel in sorted(expected & actual):
        want = (expected_root / rel).read_bytes()
        have = (installed / rel).read_bytes()
        if want != have:
            diff = difflib.unified_diff(
                have.decode("utf-8", "replace").splitlines(),
                want.decode("utf-8", "replace").splitlines(),
                f"installed/{rel}",
                f"proto/{rel}",
                lineterm="",
                n=1,
            )
            excerpt = "\n".join(list(diff)[:12])
            problems.append(f"differs from proto/: {rel}\n{excerpt}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--proto-root", type=Path, default=REPO / "proto")
    parser.add_argument(
        "--installed-root",
        type=Path,
        default=None,
        help="directory holding stratamem/v1 (default: where the installed module lives)",
    )
    args = parser.parse_args(argv)

    from importlib.metadata import version

    tools = version("grpcio-tools")
    if tools != PINNED_TOOLS:
        print(f"grpcio-tools {tools} installed, the contract pins {PINNED_TOOLS}", file=sys.stderr)
        return 1
    installed = args.installed_root or installed_root()
    with tempfile.TemporaryDirectory(prefix="stratamem-proto-") as tmp:
        out = Path(tmp)
        try:
            protos = compile_protos(args.proto_root.resolve(), out)
        except RuntimeError as exc:
            print(f"proto check: compile error: {exc}", file=sys.stderr)
            return 2
        problems = compare(out, installed)
    if problems:
        print(f"proto check: installed stubs in {installed} drift from proto/:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        print(
            "regenerate with: uv sync --all-packages --reinstall-package stratamem-contract",
            file=sys.stderr,
        )
        return 1
    print(f"proto check: {len(protos)} .proto files match the installed stubs in {installed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
