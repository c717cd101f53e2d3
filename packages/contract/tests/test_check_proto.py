"""The proto drift check passes on main and fails on a broken or changed ``.proto``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "check_proto.py"
PROTO = REPO / "proto"

pytestmark = pytest.mark.skipif(
    not (SCRIPT.exists() and PROTO.is_dir()), reason="needs the monorepo checkout"
)


def run_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def proto_copy(tmp_path: Path) -> Path:
    root = tmp_path / "proto"
    shutil.copytree(PROTO, root)
    return root


def test_installed_stubs_match_proto_on_main() -> None:
    result = run_check()
    assert result.returncode == 0, result.stderr
    assert "match the installed stubs" in result.stdout


def test_an_unchanged_copy_of_proto_passes(proto_copy: Path) -> None:
    assert run_check("--proto-root", str(proto_copy)).returncode == 0


def test_a_proto_that_does_not_compile_fails(proto_copy: Path) -> None:
    target = proto_copy / "stratamem" / "v1" / "types.proto"
    target.write_text(target.read_text("utf-8") + "\nmessage Broken { string x = ; }\n", "utf-8")
    result = run_check("--proto-root", str(proto_copy))
    assert result.returncode == 2
    assert "compile error" in result.stderr


def test_a_changed_proto_drifts_from_the_installed_stubs(proto_copy: Path) -> None:
    target = proto_copy / "stratamem" / "v1" / "types.proto"
    text = target.read_text("utf-8")
    target.write_text(
        text.replace("string agent_kind = 1;", "string agent_kind = 1;\n  string added = 99;"),
        "utf-8",
    )
    result = run_check("--proto-root", str(proto_copy))
    assert result.returncode == 1
    assert "differs from proto/: stratamem/v1/types_pb2.py" in result.stderr


def test_a_removed_proto_leaves_stale_stubs_that_fail(proto_copy: Path) -> None:
    (proto_copy / "stratamem" / "v1" / "host_llm.proto").unlink()
    result = run_check("--proto-root", str(proto_copy))
    assert result.returncode == 1
    assert "stale): stratamem/v1/host_llm_pb2.py" in result.stderr


def test_a_new_proto_missing_from_the_installed_stubs_fails(proto_copy: Path) -> None:
    extra = proto_copy / "stratamem" / "hosts" / "probe" / "v1" / "probe.proto"
    extra.parent.mkdir(parents=True)
    extra.write_text(
        'syntax = "proto3";\npackage stratamem.hosts.probe.v1;\nmessage P {}\n', "utf-8"
    )
    result = run_check("--proto-root", str(proto_copy))
    assert result.returncode == 1
    assert (
        "missing from the installed stubs: stratamem/hosts/probe/v1/probe_pb2.py" in result.stderr
    )
