"""The same question over the same memories gets the same answer in two processes, also above the
ANN threshold: the HNSW graph the hot index builds at open is the same graph in every process.

Why: usearch inserts a batch with ``threads`` workers linking nodes concurrently, so a graph built
with two threads depended on their timing. Over the scaling bench's 100k home, two processes'
graphs proposed different candidates for most questions and the vector channel's top 40 differed
on ~25 of 60; one question's hits changed (bench/results/determinism-session12.md). Each worker
here opens its own copy of one real LanceDB home, so both rebuild the graph from the same rows."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
from test_hot_index import _row
from together import assert_all_ok, python_cmd, run_together

from stratamem.core.storage.lance import LanceStore

DIM = 32
ROWS = 6000
#: the graph above 1,000 rows (production: 30k); a narrow search breadth and no over-fetch, so
#: the graph's own proposals decide the vector channel's top 10 (as they do near-ties at 100k)
CFG = {
    "hot_ann_threshold_rows": 1000,
    "hot_ann_expansion_search": 16,
    "hot_ann_oversample": 1,
    "ann_threshold_rows": 10**9,
}

WORKER = textwrap.dedent(
    """
    import asyncio, json, shutil, sys
    from pathlib import Path
    import numpy as np
    from stratamem.core.retrieval.filters import TraceFilter
    from stratamem.core.retrieval.hot_channels import trace_mask
    from stratamem.core.storage.lance import LanceStore
    from stratamem.contract.dtos import Namespace

    async def main(src, own, cfg, dim):
        shutil.copytree(src, own)  # one process owns a home: each gets its own copy of it
        store = await LanceStore(Path(own), dim, "m", cfg).open()
        await store.hot.settle()
        t = store.hot.tables["traces"]
        ann = t.ann["vec_summary"]
        assert ann is not None and len(ann) == t.live, "no graph"
        mask = trace_mask(t, TraceFilter(namespace=Namespace(agent_kind="hermes")), vector=True)
        rng = np.random.default_rng(11)
        out = []
        for _ in range(60):
            q = rng.standard_normal(dim).astype(np.float32)
            q /= np.linalg.norm(q)
            top = [(t.ids[s], round(sc, 6)) for s, sc in t.vector("vec_summary", q, mask, 10)]
            out.append({"top": top, "proposed": ann.search(q, 40).tolist()})
        print(json.dumps(out))

    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])))
    """
)


def _rows() -> list[dict[str, object]]:
    """Clustered unit vectors (near-ties for the graph to link differently), one owner."""
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((24, DIM)).astype(np.float32)
    rows: list[dict[str, object]] = []
    for i in range(ROWS):
        v = centers[i % 24] + 0.5 * rng.standard_normal(DIM).astype(np.float32)
        rows.append(_row(i, v / np.linalg.norm(v), "default"))
    return rows


async def test_two_processes_build_the_same_graph_and_rank_alike(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = await LanceStore(home, DIM, "m", {**CFG, "hot_index": False}).open()
    table = store.maintenance_table("traces", "test.bulk_load")  # as the scaling bench loads
    await table.add(pa.Table.from_pylist(_rows(), schema=await table.schema()))

    cfg = json.dumps(CFG)
    # at once (as busy as a shared machine gets), and under two hash seeds: nothing may depend on
    # the order of a set or dict of strings either
    cmds = {
        f"p{seed}": [
            "env",
            f"PYTHONHASHSEED={seed}",
            *python_cmd(WORKER, str(home), str(tmp_path / f"copy{seed}"), cfg, str(DIM)),
        ]
        for seed in (1, 2)
    }
    results = run_together(cmds, deadline_s=300)
    assert_all_ok(results)
    one, two = (json.loads(results[n].stdout) for n in ("p1", "p2"))
    assert [q["proposed"] for q in one] == [q["proposed"] for q in two]
    assert [q["top"] for q in one] == [q["top"] for q in two]
