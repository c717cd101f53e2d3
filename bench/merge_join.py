"""The upsert's join: CPU per small ``merge_insert("id")`` commit as the table grows, with and
without a BTree on ``id``, beside ``add()`` of the same rows (no join) as the baseline.

``python -m bench.merge_join [--sizes 10000,50000,200000] [--commits 20]``. Without the index
every commit scans the table's ids (its cost grows with the table); with it the join reads the
index and the fragments written since the last optimize, whose cost grows with their number
(each round here ends with an optimize, so it measures the join against a compacted table).
Allocation bytes per commit (memray), the many-fragments case and the soak pairs are in
bench/results/soak-session14.md: the index is not shipped.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import BTree


def _rows(n: int, rng: np.random.Generator, dim: int = 384) -> pa.Table:
    vec = rng.standard_normal(n * dim).astype(np.float32)
    return pa.table(
        {
            "id": [f"tr_{uuid.uuid4().hex}" for _ in range(n)],
            "search_text": [f"a captured turn {i} with a few words to index" for i in range(n)],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec), dim),
        }
    )


async def _measure(size: int, commits: int, rng: np.random.Generator) -> dict[str, float]:
    db = await lancedb.connect_async(tempfile.mkdtemp(prefix="merge-join-"))
    out: dict[str, float] = {}
    tables = {}
    for mode in ("add", "merge", "merge+btree"):
        t = await db.create_table(mode.replace("+", "_"), _rows(size, rng))
        if mode == "merge+btree":
            await t.create_index("id", config=BTree())
        await t.optimize()
        tables[mode] = t
    for _round in range(2):  # alternated, the second round counts
        for mode, t in tables.items():
            batches = [_rows(4, rng) for _ in range(commits)]
            c0 = time.process_time()
            for data in batches:
                if mode == "add":
                    await t.add(data)
                else:
                    await (
                        t.merge_insert("id")
                        .when_matched_update_all()
                        .when_not_matched_insert_all()
                        .execute(data)
                    )
            out[mode] = (time.process_time() - c0) / commits * 1000
            await t.optimize()
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="10000,50000,200000")
    ap.add_argument("--commits", type=int, default=20)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print("rows     add ms   merge ms (x add)   merge+btree ms (x add)   CPU per 4-row commit")
    for size in (int(s) for s in a.sizes.split(",")):
        r = await _measure(size, a.commits, rng)
        print(
            f"{size:<8} {r['add']:6.1f}   {r['merge']:6.1f} ({r['merge'] / r['add']:.1f}x)"
            f"       {r['merge+btree']:6.1f} ({r['merge+btree'] / r['add']:.1f}x)",
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
