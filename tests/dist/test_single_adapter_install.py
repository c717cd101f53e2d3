"""One adapter installs alone from the wheelhouse into a fresh venv, as a user would install it.

Our five names come only from the wheelhouse (``--no-index``); their third-party dependencies are
installed first from the index configured on this machine. The wheelhouse is
``$STRATAMEM_WHEELHOUSE`` or ``.artifacts/wheelhouse`` (built by ``scripts/build_wheelhouse.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
OURS = {
    "stratamem-contract",
    "stratamem-core",
    "stratamem-openclaw",
    "stratamem-hermes",
    "stratamem-dsh",
}
ADAPTERS = {"openclaw": "stratamem-openclaw", "hermes": "stratamem-hermes", "dsh": "stratamem-dsh"}

pytestmark = pytest.mark.timeout(900)


def uv() -> str:
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except ImportError:
        import shutil

        found = shutil.which("uv")
        if found is None:
            pytest.skip("uv is not installed")
        return found


def run(*args: str, cwd: Path | None = None) -> str:
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    env["UV_PYTHON_DOWNLOADS"] = "never"
    proc = subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert proc.returncode == 0, f"{' '.join(args)}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    configured = os.environ.get("STRATAMEM_WHEELHOUSE")
    out = Path(configured) if configured else REPO / ".artifacts" / "wheelhouse"
    if not (out.is_dir() and list(out.glob("stratamem_*.whl"))):
        out = tmp_path_factory.mktemp("wheelhouse")
        run(sys.executable, str(REPO / "scripts" / "build_wheelhouse.py"), str(out))
    return out


def wheel_for(wheelhouse: Path, dist: str) -> Path:
    found = sorted(wheelhouse.glob(f"{dist.replace('-', '_')}-*.whl"))
    assert found, f"no wheel for {dist} in {wheelhouse}"
    return found[-1]


def requires(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(z.read(meta).decode("utf-8"))
    return [Requirement(r) for r in message.get_all("Requires-Dist") or []]


def third_party_closure(wheelhouse: Path, dist: str) -> list[str]:
    """Third-party requirements of ``dist`` and of our packages it pulls in (extras excluded)."""
    seen: set[str] = set()
    out: list[str] = []
    todo = [dist]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in requires(wheel_for(wheelhouse, name)):
            if req.marker is not None and "extra" in str(req.marker):
                continue
            if req.name in OURS:
                todo.append(req.name)
            else:
                out.append(str(req))
    return sorted(set(out))


def fresh_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    run(uv(), "venv", "--quiet", "--python", sys.executable, str(venv))
    return venv


def install_alone(venv: Path, wheelhouse: Path, dist: str) -> None:
    py = str(venv / "bin" / "python")
    deps = third_party_closure(wheelhouse, dist)
    if deps:
        run(uv(), "pip", "install", "--quiet", "--python", py, *deps)
    # our names: from the wheelhouse only, never from an index
    run(
        uv(),
        "pip",
        "install",
        "--quiet",
        "--python",
        py,
        "--no-index",
        "--find-links",
        str(wheelhouse),
        dist,
    )


def installed(venv: Path) -> set[str]:
    out = run(uv(), "pip", "list", "--format", "freeze", "--python", str(venv / "bin" / "python"))
    return {line.split("==")[0].lower() for line in out.splitlines() if line.strip()}


def python(venv: Path, code: str) -> str:
    return run(str(venv / "bin" / "python"), "-c", code, cwd=venv.parent)


@pytest.mark.parametrize("host", sorted(ADAPTERS))
def test_one_adapter_installs_alone_with_contract_and_core(
    host: str, wheelhouse: Path, tmp_path: Path
) -> None:
    dist = ADAPTERS[host]
    venv = fresh_venv(tmp_path)
    install_alone(venv, wheelhouse, dist)
    names = installed(venv)
    assert {dist, "stratamem-core", "stratamem-contract"} <= names
    assert not (names & (OURS - {dist, "stratamem-core", "stratamem-contract"})), names
    assert "torch" not in names
    out = python(
        venv,
        f"import stratamem.{host}, stratamem.core, stratamem.contract, importlib.util\n"
        "from stratamem.v1 import memory_pb2_grpc\n"
        "from stratamem.contract.codec import to_proto\n"
        "print(stratamem.contract.__version__, memory_pb2_grpc.MemoryServiceStub.__name__)\n"
        "others = [h for h in ('openclaw', 'hermes', 'dsh') if h != "
        f"'{host}' and importlib.util.find_spec('stratamem.' + h)]\n"
        "assert not others, others\n"
        "assert importlib.util.find_spec('torch') is None\n",
    )
    assert "MemoryServiceStub" in out


def test_contract_wheel_alone_imports_its_stubs_and_dtos(wheelhouse: Path, tmp_path: Path) -> None:
    venv = fresh_venv(tmp_path)
    install_alone(venv, wheelhouse, "stratamem-contract")
    names = installed(venv)
    assert names & OURS == {"stratamem-contract"}
    assert names - {"stratamem-contract"} <= {"grpcio", "protobuf", "typing-extensions"}
    out = python(
        venv,
        "from stratamem.v1 import memory_pb2, memory_pb2_grpc, workspace_pb2_grpc, host_llm_pb2_grpc\n"
        "from stratamem.contract import TurnInput, MemoryCore, StratamemError\n"
        "from stratamem.contract.codec import to_proto, from_proto\n"
        "t = TurnInput(agent='a', session_id='s', user_text='hi', ts=1)\n"
        "assert from_proto(to_proto(t)) == t\n"
        "print(len(memory_pb2.DESCRIPTOR.services_by_name['MemoryService'].methods))\n",
    )
    assert int(out.strip()) >= 32


@pytest.fixture
def contract_sdist(wheelhouse: Path) -> Iterator[Path]:
    found = sorted(wheelhouse.glob("stratamem_contract-*.tar.gz"))
    assert found, "no contract sdist"
    yield found[-1]


def test_contract_sdist_carries_the_protos_and_builds_a_wheel_from_itself(
    contract_sdist: Path, tmp_path: Path
) -> None:
    with tarfile.open(contract_sdist) as tar:
        names = tar.getnames()
        protos = {
            n.split("/proto/", 1)[1] for n in names if "/proto/" in n and n.endswith(".proto")
        }
        tar.extractall(tmp_path / "src", filter="data")
    repo_protos = {
        p.relative_to(REPO / "proto").as_posix() for p in (REPO / "proto").rglob("*.proto")
    }
    assert protos == repo_protos
    (root,) = (tmp_path / "src").iterdir()
    run(uv(), "build", "--quiet", "--wheel", "--out-dir", str(tmp_path / "out"), str(root))
    (wheel,) = (tmp_path / "out").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        files = set(z.namelist())
    for stem in ("types", "memory", "workspace", "host_llm"):
        assert f"stratamem/v1/{stem}_pb2.py" in files
        assert f"stratamem/v1/{stem}_pb2.pyi" in files
        assert f"stratamem/v1/{stem}_pb2_grpc.py" in files


#: modules that only tests use: they live with the tests, never in a wheel users install
TEST_ONLY = ("stub_server", "conftest", "_fakes", "/tests/")


def test_no_wheel_ships_a_test_helper(wheelhouse: Path) -> None:
    wheels = sorted(wheelhouse.glob("stratamem_*.whl"))
    assert len(wheels) == len(OURS)
    shipped = {
        w.name: [n for n in zipfile.ZipFile(w).namelist() if any(t in n for t in TEST_ONLY)]
        for w in wheels
    }
    assert shipped == {w.name: [] for w in wheels}
