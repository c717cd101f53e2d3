"""Vector channel over an ANN index: tuned recall, filter after an over-fetched search, and the
prefilter fallback when too few rows survive the filter."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stratamem.contract.dtos import Namespace
from stratamem.core.retrieval.channels import table_vector
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.ownership import Scope, visible_where

DIM = 32


def _row(i: int, vec: np.ndarray, agent: str) -> dict[str, object]:
    return {
        "id": f"tr_{agent}_{i}",
        "episode_id": "ep",
        "session_id": "s",
        "ts": i,
        "turn_id": i,
        "user_text": f"row {i}",
        "search_text": f"row {i}",
        "owner_agent_kind": agent,
        "owner_profile_id": "default",
        "share_scope": "private",
        "priority": 0.5,
        "vec_summary": vec,
    }


async def test_ann_search_filters_after_the_search_and_falls_back_for_rare_namespaces(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((16, DIM)).astype(np.float32)

    def vec() -> np.ndarray:
        v = centers[rng.integers(16)] + 0.3 * rng.standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    store = await LanceStore(tmp_path, DIM, "m", {"ann_threshold_rows": 500}).open()
    rows = [_row(i, vec(), "alpha") for i in range(1200)]
    rows += [_row(i, vec(), "beta") for i in range(3)]
    await store.upsert("traces", rows)
    await store.ensure_indexes()
    assert store.has_ann("traces", "vec_summary")
    table = store.maintenance_table("traces", "test")
    alpha = visible_where(Namespace(agent_kind="alpha"))
    beta = visible_where(Namespace(agent_kind="beta"))
    hits = 0
    for _ in range(10):
        q = vec()
        got = await table_vector(table, "vec_summary", q, alpha, 10, store=store, name="traces")
        assert len(got) == 10 and all(r["owner_agent_kind"] == "alpha" for r, _ in got)
        exact = await store.vector_search(
            "traces", "vec_summary", q, Scope.visible(Namespace(agent_kind="alpha")), 10, exact=True
        )
        hits += len({r["id"] for r, _ in got} & {r["id"] for r in exact})
    assert hits / 100 >= 0.9
    rare = await table_vector(table, "vec_summary", vec(), beta, 10, store=store, name="traces")
    assert sorted(r["id"] for r, _ in rare) == ["tr_beta_0", "tr_beta_1", "tr_beta_2"]
    wide = await store.vector_search(
        "traces", "vec_summary", vec(), Scope.visible(Namespace(agent_kind="alpha")), 50
    )
    assert len(wide) == 50  # ef is raised to cover limit × refine_factor
    store.close()
