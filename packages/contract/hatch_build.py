"""Build hook: compile every ``.proto`` under ``proto/`` into ``src/`` (messages, gRPC stubs, ``.pyi``).

Generated code is never committed nor edited by hand; the monorepo's ``proto/`` is used when present,
else the copy the sdist carries.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def proto_root(package_root: Path) -> Path:
    for candidate in (package_root.parent.parent / "proto", package_root / "proto"):
        if candidate.is_dir() and any(candidate.rglob("*.proto")):
            return candidate
    raise RuntimeError(f"no proto/ directory found near {package_root}")


def generate(package_root: Path) -> list[Path]:
    """Run protoc; returns the generated files. Raises on any compile error."""
    import grpc_tools
    from grpc_tools import protoc

    root = proto_root(package_root)
    out = package_root / "src"
    protos = sorted(str(p.relative_to(root)) for p in root.rglob("*.proto"))
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{root}",
        f"-I{include}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *protos,
    ]
    code = protoc.main(args)
    if code != 0:
        raise RuntimeError(f"protoc failed with exit code {code} for {protos}")
    generated: list[Path] = []
    for rel in protos:
        stem = out / rel[: -len(".proto")]
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"):
            path = Path(f"{stem}{suffix}")
            if path.exists():
                generated.append(path)
    return generated


class ProtoBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "sdist":
            return
        root = Path(self.root)
        files = generate(root)
        build_data.setdefault("artifacts", []).extend(str(p.relative_to(root)) for p in files)
        print(f"stratamem-contract: generated {len(files)} files from proto/", file=sys.stderr)
