"""The journal writer's own apply cost per batch, appending new rows vs writing them keyed on ``id``,
as the traces table grows: the writer's real path (``JournalWriter.apply_batch``: the LanceDB write,
the hot index, the FTS check, the journal's mark in SQLite), same process, same table.

``python -m bench.append_apply [--sizes 10000,50000,200000] [--commits 20] [--turns 4]``.
A home's traces table is filled to each size (copies of a captured row, new ids, random vectors;
hot index reloaded), then rounds of ``--commits`` batches of ``--turns`` turns alternate between
three arms: "append" as ``turn_end`` leaves them (ids minted in the transaction: ``add()``);
"replay" with that mark taken off, i.e. what a replay or a retry does (``insert_missing``: the
ids looked up, the missing rows appended); "merge", the same with ``merge_insert("id")`` in its
place, what every batch did before session 15 (a join over a scan of the table's ids). Each round
ends with an optimize; the second round counts. Printed: CPU (process, all threads) and wall ms
per batch, the other arms as multiples of append.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from stratamem.contract.dtos import TurnResult
from stratamem.core import open_core
from stratamem.core.storage.journal import NEW
from stratamem.core.storage.ownership import Scope


async def _fill(core: Any, size: int, rng: np.random.Generator) -> None:
    """``size`` rows in the traces table, shaped like a captured turn's row."""
    await _turns(core, 1, "template")
    await core.journal.apply_batch()
    store = core.store
    template = (await store.scan("traces", Scope.everything("bench.append_apply"), None, 1))[0]
    tbl = store.maintenance_table("traces", "bench.append_apply")
    schema = await tbl.schema()
    vec_cols = [f.name for f in schema if pa.types.is_fixed_size_list(f.type)]
    for start in range(0, size, 25_000):
        n = min(25_000, size - start)
        rows = []
        for i in range(n):
            r = dict(template, id=f"tr_{uuid.uuid4().hex[:12]}", journal_seq=0)
            r["search_text"] = f"filler turn {start + i} with a few words to index"
            for col in vec_cols:
                v = rng.standard_normal(store.dim).astype(np.float32)
                r[col] = (v / np.linalg.norm(v)).tolist()
            rows.append(r)
        await tbl.add(pa.Table.from_pylist(rows, schema=schema))
    await store.ensure_indexes()  # as a home of this size has them (and not built mid-round)
    await store.optimize()
    await store.reload_hot(wait_ann=True)  # no graph build running beside the rounds


async def _turns(core: Any, n: int, tag: str) -> None:
    for i in range(n):
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id=f"s-{tag}",
                agent_text=f"answer {tag} {i}",
                user_text=f"question {tag} {i} about the apply path",
                ts=int(time.time() * 1000),
            )
        )


async def _round(core: Any, arm: str, commits: int, turns: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per applied batch."""
    cpu = wall = 0.0
    for c in range(commits):
        await _turns(core, turns, f"{arm}{c}")
        if arm != "append":
            for e in core.journal.pending.values():
                e.pop(NEW, None)
        if arm == "merge":  # the writer's path before session 15 (instance attribute, undone)
            core.store.insert_missing = core.store.upsert
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            applied = await core.journal.apply_batch()
        finally:
            core.store.__dict__.pop("insert_missing", None)
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
        assert applied == turns and not core.journal.pending
    return cpu / commits * 1000, wall / commits * 1000


async def _measure(size: int, commits: int, turns: int) -> dict[str, tuple[float, float]]:
    home = Path(tempfile.mkdtemp(prefix="append-apply-"))
    async with open_core(home, embedding__provider="none") as core:
        writer = core.journal
        writer._stopping = True  # the bench applies each batch itself, timed
        writer._wake.set()
        if writer._task is not None:
            writer._task.cancel()
        await _fill(core, size, np.random.default_rng(size))
        out: dict[str, tuple[float, float]] = {}
        for _round_no in range(2):  # alternated, the second round counts
            for arm in ("append", "replay", "merge"):
                out[arm] = await _round(core, arm, commits, turns)
                await core.store.optimize()
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="10000,50000,200000")
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--turns", type=int, default=4)
    a = ap.parse_args()
    print(f"CPU / wall ms per {a.turns}-turn batch (x append)")
    print("rows     append            replay (insert_missing)        merge (merge_insert)")
    for size in (int(s) for s in a.sizes.split(",")):
        r = await _measure(size, a.commits, a.turns)
        (ac, aw), (rc, rw), (mc, mw) = r["append"], r["replay"], r["merge"]
        print(
            f"{size:<8} {ac:6.1f} / {aw:6.1f}    {rc:6.1f} / {rw:6.1f} ({rc / ac:.1f}x / {rw / aw:.1f}x)"
            f"    {mc:6.1f} / {mw:6.1f} ({mc / ac:.1f}x / {mw / aw:.1f}x)",
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
