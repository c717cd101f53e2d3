"""Prefetch latency of the installed provider under the real ``MemoryManager`` (default embedder).

``python measure_prefetch.py [turns]``: each turn runs on_turn_start → prefetch_all (timed, on Hermes'
prefetch thread) → sync_all; prints p50/p95/max in ms as JSON. Not a test: figures for the report.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

TOPICS = [
    "deploy the staging cluster with helm",
    "my favourite colour is teal",
    "fix the flaky integration test in the billing service",
    "write a haiku about autumn rain",
    "rename the column user_id to account_id in the orders table",
    "summarise the quarterly report for the board",
    "debug the memory leak in the websocket gateway",
    "plan a three day trip to Lisbon",
]


def main() -> int:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as tmp:
        hh = Path(tmp) / ".hermes"
        hh.mkdir()
        os.environ["HERMES_HOME"] = str(hh)
        os.environ.pop("STRATAMEM_HOME", None)
        from agent.memory_manager import MemoryManager
        from plugins.memory import load_memory_provider

        from stratamem.hermes import install

        install.install(hh, python=sys.executable, check_import=False)
        provider = load_memory_provider("stratamem")
        mgr = MemoryManager()
        mgr.add_provider(provider)
        mgr.initialize_all(
            session_id="bench-1",
            platform="cli",
            hermes_home=str(hh),
            agent_context="primary",
            agent_identity="default",
        )
        provider._bridge.warm().result(120)  # measure recall, not the one-off model load
        times: list[float] = []
        injected = 0
        for n in range(1, turns + 1):
            text = f"{TOPICS[n % len(TOPICS)]} (request {n})"
            mgr.on_turn_start(n, text)
            start = time.perf_counter()
            out = mgr.prefetch_all(text)
            times.append((time.perf_counter() - start) * 1000)
            injected += bool(out)
            mgr.sync_all(text, f"done with request {n}", session_id=f"bench-{n % 5}")
            if n % 5 == 0:
                mgr.flush_pending(timeout=60)
        mgr.shutdown_all()
    q = statistics.quantiles(times, n=100)
    print(
        json.dumps(
            {
                "turns": turns,
                "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(q[94], 1),
                "max_ms": round(max(times), 1),
                "turns_with_recall": injected,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
