"""Storage: home lock, SQLite migrations, idempotent LanceDB upserts, ANN recall vs exact search."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from stratamem.contract import __version__ as CONTRACT_VERSION
from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import StratamemError
from stratamem.contract.hostkit.client import owner_record
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.lock import HomeLock
from stratamem.core.storage.ownership import Scope
from stratamem.core.storage.sqlite import MIGRATIONS, Database

DIM = 32


def _row(i: int, vec: np.ndarray, kind: str = "a") -> dict[str, object]:
    return {
        "id": f"tr_{i:06d}",
        "episode_id": "ep_1",
        "session_id": "se_1",
        "ts": i,
        "turn_id": i,
        "user_text": f"question {i}",
        "agent_text": "answer",
        "search_text": f"question {i} answer",
        "owner_agent_kind": kind,
        "owner_profile_id": "default",
        "share_scope": "private",
        "vec_summary": vec,
    }


def test_second_lock_on_a_home_fails_naming_the_owner_pid(tmp_path: Path) -> None:
    lock = HomeLock(tmp_path).acquire(socket="/x.sock")
    try:
        with pytest.raises(StratamemError) as err:
            HomeLock(tmp_path).acquire()
        assert err.value.code == "home_locked"
        assert str(os.getpid()) in err.value.message
        assert owner_record(tmp_path) == {
            "pid": os.getpid(),
            "uid": os.getuid(),
            "contract_version": CONTRACT_VERSION,
            "socket": "/x.sock",
        }
    finally:
        lock.release()
    assert owner_record(tmp_path) is None
    HomeLock(tmp_path).acquire().release()


def test_lock_held_by_another_process_is_reported(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from stratamem.core.storage.lock import HomeLock
        HomeLock(Path({str(tmp_path)!r})).acquire()
        print("locked", flush=True)
        time.sleep(30)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(StratamemError) as err:
            HomeLock(tmp_path).acquire()
        assert err.value.details["pid"] == proc.pid
    finally:
        proc.kill()
        proc.wait()
    HomeLock(tmp_path).acquire().release()  # the dead owner's lock is gone


def test_migrations_run_once_and_are_recorded(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.db")
    assert db.schema_version() == MIGRATIONS[-1][0]
    db.close()
    db2 = Database(tmp_path / "s.db")
    assert db2.migrate() == []
    assert db2.query("PRAGMA journal_mode")[0][0] == "wal"
    db2.close()


async def test_upsert_is_idempotent_on_id(tmp_path: Path) -> None:
    store = await LanceStore(tmp_path, DIM, "m", {}).open()
    rng = np.random.default_rng(0)
    rows = [_row(i, rng.standard_normal(DIM).astype(np.float32)) for i in range(10)]
    await store.upsert("traces", rows)
    await store.upsert("traces", rows)
    assert await store.count("traces", Scope.everything("test")) == 10
    store.close()


async def test_reopening_with_another_dimension_is_a_typed_error(tmp_path: Path) -> None:
    store = await LanceStore(tmp_path, DIM, "m", {}).open()
    store.close()
    with pytest.raises(StratamemError) as err:
        await LanceStore(tmp_path, DIM * 2, "other", {}).open()
    assert err.value.code == "embedding_dimension_mismatch"
    assert "reembed" in err.value.message


async def test_fts_index_appears_once_rows_exist(tmp_path: Path) -> None:
    store = await LanceStore(tmp_path, DIM, "m", {}).open()
    assert await store.fts_search("traces", "question", Scope.everything("test"), 5) == []
    rng = np.random.default_rng(1)
    await store.upsert("traces", [_row(i, rng.standard_normal(DIM)) for i in range(5)])
    await store.ensure_indexes()
    hits = await store.fts_search("traces", "question 3", Scope.everything("test"), 5)
    assert hits and hits[0]["id"] == "tr_000003"
    store.close()


async def test_ann_index_recall_at_10_matches_exact_search(tmp_path: Path) -> None:
    """Structured synthetic data (low-rank latent space) so neighbours exist, as in stack.md §2.3."""
    n, latent = 3000, 8
    rng = np.random.default_rng(7)
    proj = rng.standard_normal((latent, DIM))
    vecs = rng.standard_normal((n, latent)) @ proj + 0.05 * rng.standard_normal((n, DIM))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    store = await LanceStore(tmp_path, DIM, "m", {"ann_threshold_rows": 2000}).open()
    await store.upsert("traces", [_row(i, vecs[i], "a" if i % 2 else "b") for i in range(n)])
    built = await store.ensure_indexes()
    assert "traces.vec_summary" in built and store.has_ann("traces", "vec_summary")
    scope = Scope.owned(Namespace(agent_kind="a"))
    recalls = []
    for qi in range(20):
        q = vecs[qi * 37] + 0.05 * rng.standard_normal(DIM).astype(np.float32)
        exact = await store.vector_search("traces", "vec_summary", q, scope, 10, exact=True)
        ann = await store.vector_search("traces", "vec_summary", q, scope, 10)
        assert all(r["owner_agent_kind"] == "a" for r in ann)
        recalls.append(len({r["id"] for r in exact} & {r["id"] for r in ann}) / 10)
    assert float(np.mean(recalls)) >= 0.9, recalls
    store.close()


async def test_a_table_counts_as_possibly_non_empty_from_its_first_write_and_after_reopen(
    tmp_path: Path,
) -> None:
    store = await LanceStore(tmp_path, DIM, "m", {}).open()
    assert not store.may_have_rows("skills") and not store.may_have_rows("traces")
    await store.upsert("traces", [_row(0, np.ones(DIM, dtype=np.float32))])
    assert store.may_have_rows("traces") and not store.may_have_rows("skills")
    store.close()
    again = await LanceStore(tmp_path, DIM, "m", {}).open()
    assert again.may_have_rows("traces") and not again.may_have_rows("skills")
    again.close()


async def test_the_engine_uses_the_system_allocator_for_arrow(tmp_path: Path) -> None:
    """Arrow's mimalloc pool kept every write batch's pages (the soak's RSS growth): the store
    switches the process to the system pool when it opens (``storage.arrow_memory_pool``)."""
    import pyarrow as pa

    pa.set_memory_pool(pa.mimalloc_memory_pool())
    store = await LanceStore(tmp_path, DIM, "m", {}).open()
    try:
        assert pa.default_memory_pool().backend_name == "system"
        rng = np.random.default_rng(3)
        await store.upsert("traces", [_row(i, rng.standard_normal(DIM)) for i in range(3)])
        assert await store.count("traces", Scope.everything("test")) == 3
    finally:
        store.close()


async def test_lancedb_caches_stay_small_between_optimizes_with_the_shipped_bounds(
    tmp_path: Path,
) -> None:
    """Issue 16's soak: each commit leaves ~0.1 MB of metadata (manifest, fragment and index
    metadata of its table version) in LanceDB's cache until the next optimize renews the
    session; under the old 32 MB bound that swung the soak's RSS by up to ~24 MB between
    samples. With the shipped bounds, 150 single-row commits (the journal writer's pattern, with
    full-text reads between them) leave at most ~10 MB cached (the old bounds: ~14.5 MB)."""
    store = await LanceStore(tmp_path, DIM, "m", {}).open()
    try:
        rng = np.random.default_rng(9)
        everything = Scope.everything("test")
        peak = 0
        for i in range(150):
            await store.upsert("traces", [_row(i, rng.standard_normal(DIM))])
            if i == 10:
                await store.ensure_fts("traces")
            if i > 10 and i % 10 == 0:
                assert await store.fts_search("traces", f"question {i}", everything, 5)
                peak = max(peak, store.cache_bytes())
        peak = max(peak, store.cache_bytes())
        assert store.sessions_opened == 0  # no optimize ran: the bound alone held it
        assert peak > 2_000_000, peak  # the commits did fill the cache (it measures something)
        assert peak <= 10_000_000, peak
    finally:
        store.close()


async def test_optimize_reopens_the_tables_on_a_fresh_lancedb_session(tmp_path: Path) -> None:
    """Each commit leaves entries keyed by its table version in the LanceDB session's caches,
    weighed at about half what they hold (the soak's RSS grew past the cache bounds): optimize
    drops the session with all of it (``storage.lance_session_renew_every``), and nothing
    written is lost, a write racing the swap included."""
    store = await LanceStore(tmp_path, DIM, "m", {}).open()
    try:
        rng = np.random.default_rng(5)
        for i in range(20):  # one commit (one table version) each, as the journal writer does
            await store.upsert("traces", [_row(i, rng.standard_normal(DIM))])
        await store.ensure_indexes()
        everything = Scope.everything("test")
        assert await store.fts_search("traces", "question 7", everything, 5)
        cached = store.cache_bytes()
        assert cached > 0 and store.sessions_opened == 0
        await store.optimize()
        assert store.sessions_opened == 1
        assert store.cache_bytes() < cached  # nothing of the old versions is held
        await asyncio.gather(
            store.renew_session(), store.upsert("traces", [_row(20, rng.standard_normal(DIM))])
        )
        assert store.sessions_opened == 2
        assert await store.count("traces", everything) == 21
        hits = await store.fts_search("traces", "question 7", everything, 5)
        assert hits and hits[0]["id"] == "tr_000007"
    finally:
        store.close()


async def test_the_session_is_kept_when_renewal_is_off(tmp_path: Path) -> None:
    store = await LanceStore(tmp_path, DIM, "m", {"lance_session_renew_every": 0}).open()
    try:
        await store.upsert("traces", [_row(0, np.ones(DIM, dtype=np.float32))])
        await store.optimize()
        assert store.sessions_opened == 0
    finally:
        store.close()
