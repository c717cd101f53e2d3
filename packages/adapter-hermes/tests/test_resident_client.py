"""The provider is a thin client of the home's resident service: a fresh Hermes process loads no engine
module, and when the service cannot start in time the turn skips recall but its capture is spooled
durably and reaches the store once a service runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip(
    "agent.memory_manager", reason="needs the real hermes-agent (tox -e py311-hermes)"
)

from stratamem.contract.hostkit.client import ensure_service, owner_record, stop_service
from stratamem.hermes import install

HEAVY = ("lancedb", "pyarrow", "numpy", "onnxruntime", "tokenizers", "stratamem.core.local")
FACT = "The spare key to the boathouse hangs behind the barometer."

#: one fresh Hermes process: the real MemoryManager, the provider found by Hermes' discovery
PROCESS = textwrap.dedent(
    """
    import json, os, sys
    from agent.memory_manager import MemoryManager
    from plugins.memory import load_memory_provider

    provider = load_memory_provider("stratamem")
    mgr = MemoryManager()
    mgr.add_provider(provider)
    mgr.initialize_all(session_id=sys.argv[1], platform="cli", hermes_home=os.environ["HERMES_HOME"],
                       agent_context="primary", agent_identity="default")
    mgr.on_turn_start(1, sys.argv[2])
    recall = mgr.prefetch_all(sys.argv[2])
    mgr.sync_all(sys.argv[2], "Noted.", session_id=sys.argv[1])
    mgr.flush_pending(timeout=60)
    mgr.shutdown_all()
    heavy = sorted(m for m in sys.modules if m in HEAVY or m.split(".")[0] in HEAVY)
    print(json.dumps({"recall": recall, "heavy": heavy}))
    """
).replace("HEAVY", repr(HEAVY))


def _process(hermes_home: Path, session: str, text: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROCESS, session, text],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_fresh_hermes_process_recalls_through_the_service_without_loading_the_engine(
    hermes_home: Path,
) -> None:
    install.install(hermes_home, python=sys.executable, check_import=False)
    home = hermes_home / "stratamem"
    (home).mkdir(exist_ok=True)
    (home / "config.yaml").write_text("embedding:\n  provider: none\n")
    first = _process(hermes_home, "s1", FACT)
    assert first["heavy"] == []
    # started by the first process, it outlives it: under load it may still be booting when that
    # process exits (its turn then spooled), so wait for it, starting nothing ourselves
    ensure_service(home, budget_s=120, start=False)
    owner = owner_record(home)
    assert owner is not None  # started by the first process, outlives it
    second = _process(hermes_home, "s2", "Where does the spare boathouse key hang?")
    assert second["heavy"] == []
    assert "barometer" in str(second["recall"])
    assert owner_record(home) == owner


def test_a_service_that_cannot_start_skips_recall_and_spools_the_capture(
    hermes_home: Path,
) -> None:
    install.install(hermes_home, python=sys.executable, check_import=False)
    home = hermes_home / "stratamem"
    home.mkdir(exist_ok=True)
    config = home / "config.yaml"
    config.write_text("embedding:\n  provider: none\nserver:\n  idle_exit_s: -5x\n")  # bad: exit 2
    first = _process(hermes_home, "s1", FACT)
    assert first["recall"] == ""  # no service: the turn goes on without recall
    assert owner_record(home) is None
    spooled = [p for p in home.rglob("*") if p.is_file() and "spool" in p.parts]
    assert spooled, "the capture must be spooled durably"
    config.write_text("embedding:\n  provider: none\n")  # fixed
    try:
        # the service is up before the next Hermes process (a cold start inside that process's
        # prefetch budget depends on the machine's load; the first test covers the on-demand start)
        ensure_service(home, budget_s=120)
        second = _process(hermes_home, "s2", "Where does the spare boathouse key hang?")
        assert "barometer" in str(second["recall"])  # the spooled turn was replayed first
    finally:
        stop_service(home)
