"""The in-memory hot index that serves recall: read-your-writes, namespace isolation, updates and
deletes, rebuild from LanceDB + the journal at restart, and the ANN graph above its threshold."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import lancedb
import numpy as np
import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TracePatch, TurnResult
from stratamem.core import LocalCore, open_core
from stratamem.core.retrieval.filters import TraceFilter
from stratamem.core.retrieval.hot_channels import trace_mask
from stratamem.core.storage.lance import LanceStore

ALPHA = Namespace(agent_kind="hermes", profile_id="alpha")
BETA = Namespace(agent_kind="hermes", profile_id="beta")


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[LocalCore]:
    async with open_core(tmp_path, embedding__provider="none") as c:
        yield c


async def _end(core: LocalCore, ns: Namespace, session: str, user: str) -> str:
    ack = await core.turn_end(
        TurnResult(
            agent="hermes",
            session_id=session,
            user_text=user,
            agent_text="noted",
            ts=int(time.time() * 1000),
            namespace=ns,
        )
    )
    return ack.trace_id


async def _ids(core: LocalCore, ns: Namespace, text: str) -> set[str]:
    res = await core.search(RetrievalQuery(agent="hermes", query=text, namespace=ns))
    return {h.ref_id for h in res.hits}


def _hot_ids(core: LocalCore) -> set[str]:
    assert core.store.hot is not None
    t = core.store.hot.tables["traces"]
    return {i for i in t.ids if i is not None}


async def test_an_acknowledged_turn_is_recalled_before_and_after_the_writer_applies_it(
    core: LocalCore,
) -> None:
    tid = await _end(core, ALPHA, "s1", "my locker combination is seventeen")
    assert tid in await _ids(core, ALPHA, "locker combination")
    await core.flush(10)
    assert tid in _hot_ids(core)  # applied rows are served from memory
    assert tid in await _ids(core, ALPHA, "locker combination")


async def test_namespaces_never_see_each_others_rows_in_the_hot_index(core: LocalCore) -> None:
    a = await _end(core, ALPHA, "sa", "the zebra code word is purple")
    b = await _end(core, BETA, "sb", "the zebra code word is orange")
    await core.flush(10)
    assert {a, b} <= _hot_ids(core)
    assert await _ids(core, ALPHA, "zebra code word") == {a}
    assert await _ids(core, BETA, "zebra code word") == {b}
    other = Namespace(agent_kind="openclaw", profile_id="alpha")
    assert await _ids(core, other, "zebra code word") == set()


async def test_updates_and_deletes_reach_the_hot_index(core: LocalCore) -> None:
    tid = await _end(core, ALPHA, "s", "the moose password hint is in the drawer")
    await core.flush(10)
    await core.update_trace(
        tid, TracePatch(user_text="the walrus password hint", summary="walrus hint"), ALPHA
    )
    assert tid in await _ids(core, ALPHA, "walrus")
    assert tid not in await _ids(core, ALPHA, "moose drawer")
    assert await core.delete_traces([tid], ALPHA) == 1
    assert tid not in _hot_ids(core)
    assert await _ids(core, ALPHA, "walrus password") == set()


async def test_restart_rebuilds_from_lancedb_and_replays_the_journal_into_it(
    tmp_path: Path,
) -> None:
    async with open_core(tmp_path, embedding__provider="none") as c1:
        kept = await _end(c1, ALPHA, "s", "the boat is moored at pier nine")
        lost = await _end(c1, ALPHA, "s", "the kayak is stored in shed four")
        await c1.flush(10)
    # the second turn was acknowledged but (as after a crash) never applied to LanceDB
    db = lancedb.connect(str(tmp_path / "data" / "lance"))
    db.open_table("traces").delete(f"id = '{lost}'")
    with sqlite3.connect(tmp_path / "data" / "stratamem.db") as con:
        con.execute("UPDATE journal SET applied_at = NULL WHERE target_id = ?", (lost,))
    async with open_core(tmp_path, embedding__provider="none") as c2:
        assert kept in _hot_ids(c2)  # loaded from LanceDB at open
        assert kept in await _ids(c2, ALPHA, "boat moored pier")
        assert lost in await _ids(c2, ALPHA, "kayak shed")  # replayed journal row
        await c2.flush(10)
        assert lost in _hot_ids(c2)


def _row(i: int, vec: np.ndarray, profile: str) -> dict[str, object]:
    return {
        "id": f"tr_{profile}_{i}",
        "episode_id": "ep",
        "session_id": "s",
        "ts": i,
        "turn_id": i,
        "user_text": f"row {i}",
        "search_text": f"row {i}",
        "owner_agent_kind": "hermes",
        "owner_profile_id": profile,
        "share_scope": "private",
        "priority": 0.5,
        "vec_summary": vec,
    }


async def test_ann_graph_keeps_recall_against_exact_and_reflects_deletes(tmp_path: Path) -> None:
    dim = 32
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((16, dim)).astype(np.float32)

    def vec() -> np.ndarray:
        v = centers[rng.integers(16)] + 0.4 * rng.standard_normal(dim).astype(np.float32)
        return v / np.linalg.norm(v)

    cfg = {"hot_ann_threshold_rows": 300, "ann_threshold_rows": 10**9}
    store = await LanceStore(tmp_path, dim, "m", cfg).open()
    try:
        rows = [_row(i, vec(), "alpha") for i in range(1500)]
        rows += [_row(i, vec(), "beta") for i in range(40)]
        await store.upsert("traces", rows)
        assert store.hot is not None
        await store.hot.settle()
        t = store.hot.tables["traces"]
        assert t.ann["vec_summary"] is not None
        mask = trace_mask(t, TraceFilter(namespace=ALPHA), vector=True)
        hits = 0
        for _ in range(20):
            q = vec()
            got = [s for s, _ in t.vector("vec_summary", q, mask, 10)]
            stored = t.unit_vectors("vec_summary", np.arange(t.n))
            exact = np.argsort(-np.where(mask, stored @ q, -np.inf))[:10]
            assert all(t.ids[s].startswith("tr_alpha_") for s in got)  # type: ignore[union-attr]
            hits += len(set(got) & {int(s) for s in exact})
        assert hits / 200 >= 0.95
        # a rare namespace (40 of 1540 rows) still gets its own nearest rows
        beta = trace_mask(t, TraceFilter(namespace=BETA), vector=True)
        got_b = t.vector("vec_summary", vec(), beta, 10)
        assert len(got_b) == 10 and all(t.ids[s].startswith("tr_beta_") for s, _ in got_b)  # type: ignore[union-attr]
        # deletes leave the graph too
        q = vec()
        top = t.vector("vec_summary", q, mask, 5)
        gone = [str(t.ids[s]) for s, _ in top]
        await store.delete("traces", gone)
        mask = trace_mask(t, TraceFilter(namespace=ALPHA), vector=True)
        after = {str(t.ids[s]) for s, _ in t.vector("vec_summary", q, mask, 10)}
        assert not after & set(gone) and len(after) == 10
        # a reopened store rebuilds the same rows (and its graph) from LanceDB
        store.close()
        store = await LanceStore(tmp_path, dim, "m", cfg).open()
        assert store.hot is not None
        assert store.hot.tables["traces"].live == 1540 - 5
        await store.hot.settle()  # the graph builds in the background after open
        assert store.hot.tables["traces"].ann["vec_summary"] is not None
    finally:
        store.close()


async def test_a_large_upsert_yields_the_loop_between_hot_index_slices(tmp_path: Path) -> None:
    # a journal batch is indexed in slices: another coroutine (an ack, a search) runs in between
    dim = 8
    store = await LanceStore(tmp_path, dim, "m", {}).open()
    try:
        assert store.hot is not None
        t = store.hot.tables["traces"]
        seen: list[int] = []
        done = False

        async def watch() -> None:
            while not done:
                seen.append(t.live)
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        rows = [_row(i, np.ones(dim, dtype=np.float32), "alpha") for i in range(64)]
        await store.upsert("traces", rows)
        done = True
        await watcher
        assert t.live == 64
        assert any(0 < n < 64 for n in seen)  # the loop ran while the batch was half indexed
    finally:
        store.close()


async def test_an_update_during_a_sliced_upsert_lands_after_it(tmp_path: Path) -> None:
    # the update of a row whose batch is still being indexed is not overwritten by that batch
    dim = 8
    store = await LanceStore(tmp_path, dim, "m", {}).open()
    try:
        assert store.hot is not None
        t = store.hot.tables["traces"]
        rows = [_row(i, np.ones(dim, dtype=np.float32), "alpha") for i in range(64)]
        writing = asyncio.create_task(store.upsert("traces", rows))
        for _ in range(100_000):  # until the batch is in LanceDB and its first slice indexed
            if writing.done() or t.live:
                break
            await asyncio.sleep(0)
        await store.update("traces", "tr_alpha_63", {"priority": 0.9})
        await writing
        assert t.full_row(t.slot_of["tr_alpha_63"])["priority"] == pytest.approx(0.9)
    finally:
        store.close()
