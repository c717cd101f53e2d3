"""Two Hermes processes on the same ``HERMES_HOME`` are thin clients of one resident service (started
on demand by the first): no lock error, and each process recalls the other's turns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "agent.memory_manager", reason="needs the real hermes-agent (tox -e py311-hermes)"
)

from agent.memory_manager import MemoryManager
from plugins.memory import load_memory_provider

from stratamem.contract.hostkit.client import owner_record
from stratamem.hermes import install

FACT_A = "My favourite colour is teal, remember that please."
FACT_B = "The backup bucket is called moss-archive-7, note it down."

#: the second Hermes process: its own MemoryManager and provider, loaded by Hermes' discovery
CHILD = textwrap.dedent(
    """
    import json, os, sys
    from agent.memory_manager import MemoryManager
    from plugins.memory import load_memory_provider

    provider = load_memory_provider("stratamem")
    mgr = MemoryManager()
    mgr.add_provider(provider)
    mgr.initialize_all(session_id="proc-b", platform="cli",
                       hermes_home=os.environ["HERMES_HOME"], agent_context="primary",
                       agent_identity="default")
    core = provider._bridge.warm().result(120)
    from stratamem.contract.hostkit.client import owner_record
    owner = owner_record(provider._bridge.home)
    mgr.on_turn_start(1, "Which colour do I like best?")
    recall = mgr.prefetch_all("Which colour do I like best?")
    mgr.on_turn_start(2, sys.argv[1])
    mgr.prefetch_all(sys.argv[1])
    mgr.sync_all(sys.argv[1], "Noted: moss-archive-7.", session_id="proc-b")
    assert mgr.flush_pending(timeout=60)
    mgr.shutdown_all()
    print(json.dumps({"core": type(core).__name__, "recall": recall, "owner": owner["pid"]}))
    """
)


def _manager(hermes_home: Path, session: str) -> tuple[MemoryManager, Any]:
    install.install(hermes_home, python=sys.executable, check_import=False)
    provider = load_memory_provider("stratamem")
    assert provider is not None
    mgr = MemoryManager()
    mgr.add_provider(provider)
    mgr.initialize_all(
        session_id=session,
        platform="cli",
        hermes_home=str(hermes_home),
        agent_context="primary",
        agent_identity="default",
    )
    return mgr, provider


def test_a_second_hermes_process_is_a_client_of_the_first_and_both_see_each_others_turns(
    hermes_home: Path,
) -> None:
    mgr, provider = _manager(hermes_home, "proc-a")
    try:
        core = provider._bridge.warm().result(120)
        assert type(core).__name__ == "BlockingRemoteCore"  # a thin client, not the engine
        owner = owner_record(provider._bridge.home)
        assert owner is not None and owner["pid"] != os.getpid()  # the detached service
        mgr.on_turn_start(1, FACT_A)
        mgr.prefetch_all(FACT_A)
        mgr.sync_all(FACT_A, "Noted: teal.", session_id="proc-a")
        assert mgr.flush_pending(timeout=60)

        child = subprocess.run(
            [sys.executable, "-c", CHILD, FACT_B],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert child.returncode == 0, child.stderr
        assert "home_locked" not in child.stderr.lower()
        report = json.loads(child.stdout.strip().splitlines()[-1])
        assert report["core"] == "BlockingRemoteCore"
        assert report["owner"] == owner["pid"]  # the same service, not a second one
        assert "teal" in report["recall"]  # the second process recalls the first one's turn

        mgr.on_turn_start(2, "What is the backup bucket called?")
        assert "moss-archive-7" in mgr.prefetch_all("What is the backup bucket called?")
    finally:
        mgr.shutdown_all()
