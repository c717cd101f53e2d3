"""Maintenance hands freed memory back to the OS right after an optimize: LanceDB's compaction and
its dropped session left 11-20 MB freed but resident each round until the next interval trim
(bench/results/soak-session9.md)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stratamem.contract.dtos import Namespace, TurnResult
from stratamem.core import open_core
from stratamem.core.engine.maintenance import Clock, maintenance_round
from stratamem.core.storage import allocator

NS = Namespace(agent_kind="hermes", profile_id="alpha")


async def test_an_optimize_round_is_followed_by_a_malloc_trim(tmp_path: Path) -> None:
    if allocator.mallinfo2() is None:
        pytest.skip("glibc only")
    async with open_core(
        tmp_path,
        embedding__provider="none",
        # the core's own loop neither optimizes nor trims within this test
        storage__optimize_after_rows=10**9,
        storage__optimize_interval_s=3600,
        storage__malloc_trim_interval_s=3600,
    ) as core:
        before = allocator.trims()
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s1",
                user_text="the spare key is under the blue pot",
                agent_text="noted",
                ts=int(time.time() * 1000),
                namespace=NS,
            )
        )
        await core.flush(60)
        assert core.store.rows_since_optimize >= 1
        # a round whose optimize is due (last one two hours ago), its interval trim not
        await maintenance_round(core.services, Clock(optimized=time.monotonic() - 7200))
        assert core.store.rows_since_optimize == 0  # the round optimized
        assert allocator.trims() > before
        # a round with nothing to optimize leaves the allocator to the interval
        after = allocator.trims()
        await maintenance_round(core.services, Clock())
        assert allocator.trims() == after
