"""The codec builds a DTO class's plan, encoder and decoder on the class's first use, not all of them
at import: a thin client's fresh process (``stratamem search`` on each turn) builds the few it
sends and receives (bench/results/startup-session19.md). Fresh interpreters: nothing built before."""

from __future__ import annotations

import json
import subprocess
import sys

_CHILD = """
import json, sys, threading
from stratamem.contract import codec
from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK

built_at_import = len(codec._PLANS) + len(codec._ENCODERS) + len(codec._DECODERS)
query = RetrievalQuery(
    agent="cli", query="where", namespace=Namespace(agent_kind="cli", profile_id="p"),
    reason="tool_driven", top_k=TopK(tier1=3, tier2=2, tier3=1),
)
errors, start = [], threading.Barrier(8)

def worker():  # first uses racing in eight threads: each gets a working encoder and decoder
    try:
        start.wait()
        for _ in range(50):
            assert codec.from_bytes(RetrievalQuery, codec.to_bytes(query)) == query
    except Exception as exc:  # reported below
        errors.append(repr(exc))

threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({
    "built_at_import": built_at_import,
    "planned": sorted(c.__name__ for c in codec._PLANS),
    "errors": errors,
    "dto_types": len(codec.DTO_TYPES),
}))
"""


def test_a_class_is_built_on_first_use_and_only_the_classes_used() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout.strip().splitlines()[-1])
    assert data["built_at_import"] == 0
    assert data["errors"] == []
    assert data["planned"] == ["Namespace", "RetrievalQuery", "TopK"]
    assert data["dto_types"] >= 40
