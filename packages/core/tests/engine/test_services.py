"""engine.services: the shared plumbing (SQLite thread, CPU executor, embedding, locks, budgets)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stratamem.contract.dtos import TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import commit
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.engine.services import EngineServices
from stratamem.core.storage.ownership import Scope

from .conftest import ALICE, now


async def test_sql_runs_on_the_one_sqlite_thread_and_cpu_work_elsewhere(
    svc: EngineServices,
) -> None:
    db_threads = {await svc.run_db(lambda: threading.current_thread().name) for _ in range(5)}
    cpu_thread = await svc.run_cpu(lambda: threading.current_thread().name)
    assert len(db_threads) == 1 and next(iter(db_threads)).startswith("stratamem-sqlite")
    assert cpu_thread.startswith("stratamem-cpu")
    rows = await svc.run_db(lambda: svc.db.query("SELECT count(*) AS n FROM sessions"))
    assert rows[0]["n"] == 0


async def test_one_lock_per_session(svc: EngineServices) -> None:
    assert svc.session_lock("a") is svc.session_lock("a")
    assert svc.session_lock("a") is not svc.session_lock("b")


async def test_budget_defaults_to_the_configured_deadline(svc: EngineServices) -> None:
    assert svc.deadline_left_s(None) == svc.config["retrieval"]["default_deadline_ms"] / 1000
    assert svc.deadline_left_s(now() - 1000) < 0
    assert svc.max_input == svc.config["capture"]["max_input_chars"]


async def test_no_embedder_means_no_query_vector(svc: EngineServices) -> None:
    assert await svc.embed_query("anything") is None


async def test_embedding_goes_through_the_cpu_executor(tmp_path: Path, embedder: Any) -> None:
    core = await open_local_core(tmp_path, embedder=embedder)
    try:
        svc = core.services
        q = await svc.embed_query("where is the otter den?")
        docs = await svc.run_cpu(lambda: svc.embed_documents(["where is the otter den?"]))
        assert q is not None and q.shape == (embedder.dimension,)
        assert docs.shape == (1, embedder.dimension)
        assert float(np.dot(q, docs[0])) > 0.5
    finally:
        await core.shutdown()


async def test_wait_for_writes_applies_acknowledged_turns(svc: EngineServices) -> None:
    await commit.turn_end(
        svc,
        TurnResult(agent="hermes", session_id="s", user_text="q", agent_text="a", ts=now()),
        ALICE,
    )
    pending = await svc.wait_for_writes(now() + 20_000)
    assert pending == [] and await svc.store.count("traces", Scope.everything("test")) == 1


async def test_after_shutdown_every_call_is_refused(tmp_path: Path) -> None:
    core = await open_local_core(tmp_path, embedding__provider="none")
    svc = core.services
    await core.shutdown()
    with pytest.raises(StratamemError) as err:
        svc.alive()
    assert err.value.code == "already_shut_down"
    assert svc.db_executor._shutdown and svc.cpu_executor._shutdown
