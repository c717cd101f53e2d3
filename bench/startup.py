"""Start-up of thin clients (issue 14): what a fresh host or CLI process pays before its first answer.

- client import CPU: a fresh interpreter importing the thin-client path (``hostkit.client`` +
  ``RemoteCore``), against a bare interpreter and one importing the engine (``stratamem.core.local``);
- ``stratamem search`` in a fresh process with a warm service (wall time; goal <= 300 ms idle), against
  ``python -c pass`` and ``stratamem --version`` in the same run;
- cold start to first recall: ``stratamem search`` on a home with no service (starts it on demand);
- first recall of a new Hermes process with a warm service (when hermes-agent is installed): a fresh
  interpreter loading the provider through Hermes' ``MemoryManager`` and running its first prefetch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.stats import percentile

STRATAMEM = str(Path(sys.executable).parent / "stratamem")
FACT = "The spare key to the boathouse hangs behind the barometer."
QUESTION = "Where is the spare boathouse key kept?"


#: children run as on a user's machine: bytecode caches written once and reused (a CI or sandbox
#: shell may set PYTHONDONTWRITEBYTECODE, which would recompile every module in every process)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _child_cpu(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall s, user+sys CPU s) of one child process."""
    env = ENV if env is None else env
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:4]} failed: {done.stderr[-1000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _summary(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {
        "p50_ms": round(percentile(ms, 50), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "n": len(ms),
    }


def _imports(repeat: int) -> dict[str, Any]:
    py = sys.executable
    cases = {
        "bare_python": "pass",
        "thin_client": "import stratamem.contract.hostkit.client, stratamem.contract.remote",
        "engine": "import stratamem.core.local",
    }
    out: dict[str, Any] = {}
    for name, code in cases.items():
        _child_cpu([py, "-c", code])  # warm-up: bytecode caches
        cpu = [_child_cpu([py, "-c", code])[1] for _ in range(repeat)]
        out[name] = {"cpu": _summary(cpu)}
    base = out["bare_python"]["cpu"]["p50_ms"]
    client = out["thin_client"]["cpu"]["p50_ms"]
    out["thin_client_import_cpu_ms"] = round(client - base, 1)
    out["engine_import_cpu_ms"] = round(out["engine"]["cpu"]["p50_ms"] - base, 1)
    return out


def _ingest_fact(home: Path, namespace: str = "cli/default") -> None:
    src = home.parent / f"{home.name}-fact.jsonl"
    src.write_text(
        json.dumps({"session": "s1", "user": FACT, "assistant": "Noted.", "ts": 1_700_000_000_000})
        + "\n"
    )
    done = subprocess.run(
        [
            STRATAMEM,
            "--home",
            str(home),
            "--namespace",
            namespace,
            "ingest",
            str(src),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-1000:])


def _stop(home: Path) -> None:
    from stratamem.contract.hostkit.client import stop_service

    with contextlib.suppress(Exception):
        stop_service(home, 30)


def _search_argv(home: Path) -> list[str]:
    return [STRATAMEM, "--home", str(home), "search", QUESTION, "--json"]


def _cli(tmp: Path, repeat: int, cold: int) -> dict[str, Any]:
    home = tmp / "warm"
    _ingest_fact(home)  # starts the service: warm from here on
    _child_cpu(_search_argv(home))  # warm-up: bytecode caches
    warm = [_child_cpu(_search_argv(home)) for _ in range(repeat)]
    version = [_child_cpu([STRATAMEM, "--version"])[0] for _ in range(repeat)]
    bare = [_child_cpu([sys.executable, "-c", "pass"])[0] for _ in range(repeat)]
    _stop(home)
    colds: list[float] = []
    for i in range(cold):  # no service: the search starts it and waits for its first answer
        _stop(home)
        colds.append(_child_cpu(_search_argv(home))[0])
        del i
    _stop(home)
    return {
        "warm_search_wall": _summary([w for w, _ in warm]),
        "warm_search_cpu": _summary([c for _, c in warm]),
        "version_wall": _summary(version),
        "bare_python_wall": _summary(bare),
        "cold_search_wall": _summary(colds),
    }


HERMES_CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    t0 = time.perf_counter()
    from agent.memory_manager import MemoryManager
    from plugins.memory import load_memory_provider
    provider = load_memory_provider("stratamem")
    mgr = MemoryManager()
    mgr.add_provider(provider)
    mgr.initialize_all(session_id="bench-new", platform="cli", hermes_home=os.environ["HERMES_HOME"],
                       agent_context="primary", agent_identity="default")
    mgr.on_turn_start(1, sys.argv[1])
    t1 = time.perf_counter()
    recall = mgr.prefetch_all(sys.argv[1])
    t2 = time.perf_counter()
    heavy = sorted(m for m in ("lancedb", "pyarrow", "numpy", "onnxruntime") if m in sys.modules)
    mgr.shutdown_all()
    print(json.dumps({"to_prefetch_s": t2 - t0, "prefetch_s": t2 - t1, "recall": sys.argv[2] in recall,
                      "heavy": heavy}))
    """
)


def _hermes(tmp: Path, repeat: int) -> dict[str, Any]:
    if (
        importlib.util.find_spec("agent") is None
        or importlib.util.find_spec("agent.memory_manager") is None
    ):
        return {"skipped": "hermes-agent is not installed in this environment (tox -e e2e has it)"}
    from stratamem.hermes import install

    hh = tmp / ".hermes"
    hh.mkdir()
    install.install(hh, python=sys.executable, check_import=False)
    home = hh / "stratamem"
    _ingest_fact(home, "hermes/default")  # the namespace the provider recalls from
    env = {**ENV, "HERMES_HOME": str(hh), "HERMES_DISABLE_LAZY_INSTALLS": "1"}
    env.pop("STRATAMEM_HOME", None)
    runs = []
    for i in range(repeat + 1):  # the first run writes bytecode caches; not counted
        done = subprocess.run(
            [sys.executable, "-c", HERMES_CHILD, QUESTION, "barometer"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        if i:
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    _stop(home)
    return {
        "first_prefetch": _summary([r["prefetch_s"] for r in runs]),
        "process_start_to_first_recall": _summary([r["to_prefetch_s"] for r in runs]),
        "recalled": sum(bool(r["recall"]) for r in runs),
        "heavy_modules": sorted({m for r in runs for m in r["heavy"]}),
    }


def run_startup(repeat: int = 10, cold: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="stratamem-bench-startup-") as raw:
        tmp = Path(raw)
        try:
            return {
                "imports": _imports(repeat),
                "cli": _cli(tmp, repeat, cold),
                "hermes": _hermes(tmp, max(3, repeat // 2)),
            }
        finally:  # no service outlives its temporary home, even when a step failed
            for lock in tmp.rglob("owner.lock"):
                _stop(lock.parent)


if __name__ == "__main__":
    print(json.dumps(run_startup(), indent=2))
