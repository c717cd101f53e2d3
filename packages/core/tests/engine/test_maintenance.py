"""engine.maintenance: embedding retries with back-off (real embedder, real LanceDB)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stratamem.contract.dtos import TurnResult
from stratamem.core.engine import commit, maintenance
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.storage.ownership import Scope

from .conftest import ALICE, now


async def test_a_due_retry_writes_the_vector_and_succeeds(tmp_path: Path, embedder: Any) -> None:
    core = await open_local_core(tmp_path, embedder=embedder)
    svc = core.services
    try:
        r = TurnResult(agent="hermes", session_id="s", user_text="q", agent_text="a", ts=now())
        tid = (await commit.turn_end(svc, r, ALICE)).trace_id
        await svc.journal.drain(30)
        await svc.store.update("traces", tid, {"vec_summary": None})
        await svc.run_db(
            lambda: svc.db.call(
                lambda c: svc.db.enqueue_embedding_retry(
                    c, "trace", tid, "vec_summary", "the otter den", "down"
                )
            )
        )
        await maintenance.retry_embeddings(svc)
        job = await svc.run_db(lambda: svc.db.query("SELECT * FROM embedding_retry_queue"))
        assert job[0]["status"] == "succeeded" and job[0]["attempts"] == 1
        assert job[0]["next_attempt_at"] > now()
        row = (await svc.store.get_rows("traces", [tid], Scope.everything("test")))[0]
        assert row["vec_summary"] is not None and len(row["vec_summary"]) == embedder.dimension
    finally:
        await core.shutdown()


async def test_without_an_embedder_retries_wait(tmp_path: Path) -> None:
    core = await open_local_core(tmp_path, embedding__provider="none")
    svc = core.services
    try:
        await svc.run_db(
            lambda: svc.db.call(
                lambda c: svc.db.enqueue_embedding_retry(c, "trace", "t", "vec_summary", "x", "e")
            )
        )
        await maintenance.retry_embeddings(svc)
        job = await svc.run_db(lambda: svc.db.query("SELECT * FROM embedding_retry_queue"))
        assert job[0]["status"] == "pending" and job[0]["attempts"] == 0
    finally:
        await core.shutdown()
