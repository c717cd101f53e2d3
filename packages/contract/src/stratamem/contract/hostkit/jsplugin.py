"""Installing a host's JS plugin: its files, the compiled gRPC schema it loads, its npm dependencies.

The JS plugins talk gRPC through ``@grpc/grpc-js`` with ``@grpc/proto-loader``; the schema they load is
the descriptor set compiled from ``proto/`` (what the generated Python code carries), so the plugin's
wire cannot drift from the proto.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

from google.protobuf import descriptor_pb2

from stratamem.contract.errors import ErrorCode, StratamemError

#: the package whose presence says ``npm install`` already ran
GRPC_JS = Path("node_modules") / "@grpc" / "grpc-js"


def descriptor_set(*modules: ModuleType) -> bytes:
    """A ``FileDescriptorSet`` of generated ``*_pb2`` modules (for ``loadFileDescriptorSetFromBuffer``)."""
    fds = descriptor_pb2.FileDescriptorSet()
    for module in modules:
        module.DESCRIPTOR.CopyToProto(fds.file.add())
    return fds.SerializeToString()


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".stratamem-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def sync_files(plugin_dir: Path, files: dict[str, bytes], *, dry_run: bool = False) -> list[str]:
    """Write the files that differ; returns one ``write <path>`` line per change."""
    changes: list[str] = []
    for rel, data in files.items():
        target = plugin_dir / rel
        if not target.exists() or target.read_bytes() != data:
            changes.append(f"write {target}")
            if not dry_run:
                write_atomic(target, data)
    return changes


def needs_npm(plugin_dir: Path, changes: list[str]) -> bool:
    return not (plugin_dir / GRPC_JS).is_dir() or any(c.endswith("package.json") for c in changes)


def npm_install(plugin_dir: Path, npm: str | None = None) -> None:
    exe = npm or shutil.which("npm")
    if not exe:
        raise StratamemError(
            ErrorCode.CONFIG_MISSING, "npm is not on PATH (needed for the plugin's gRPC client)"
        )
    proc = subprocess.run(
        [exe, "install", "--omit=dev", "--no-audit", "--no-fund", "--no-package-lock"],
        cwd=plugin_dir,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise StratamemError(
            ErrorCode.INTERNAL,
            f"npm install failed in {plugin_dir}: {proc.stderr.strip()[-800:]}",
            {"returncode": proc.returncode},
        )
