"""The hot index's memory budget (``storage.hot_index_max_mb``): above it the namespaces used least
recently leave memory and are served from LanceDB with the same results, and come back when used."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnResult
from stratamem.core import LocalCore, open_core
from stratamem.core.hotindex.footprint import footprint

ALPHA = Namespace(agent_kind="hermes", profile_id="alpha")
BETA = Namespace(agent_kind="hermes", profile_id="beta")
#: filler that makes each trace ~4.5 KB in memory: 120 words each shared by 8 traces of one
#: namespace (a token with fewer postings than ``postfile.SPILL`` is held in memory whole: its
#: entry, its string and its arrays), so a namespace's 160 traces are ~0.7 MB. The texts are in
#: the rows' side file, and the postings of words many traces share in the postings' side file
#: (700 words every trace shared made ~4.4 KB a trace before it)


def _filler(ns: Namespace, i: int) -> str:
    return " ".join(f"{ns.profile_id}g{i // 8}w{k}" for k in range(120))


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[LocalCore]:
    async with open_core(tmp_path, embedding__provider="none", storage__hot_index_max_mb=1) as c:
        yield c


async def _fill(core: LocalCore, ns: Namespace, fact: str, turns: int = 160) -> None:
    for i in range(turns):
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id=f"{ns.profile_id}-s{i // 10}",
                user_text=fact if i == turns // 2 else f"note {i} {_filler(ns, i)}",
                agent_text="noted",
                ts=int(time.time() * 1000),
                namespace=ns,
            )
        )
    await core.flush(30)


async def _search(core: LocalCore, ns: Namespace, text: str) -> list[tuple[str, str]]:
    res = await core.search(RetrievalQuery(agent="hermes", query=text, namespace=ns))
    return [(h.ref_id, h.snippet) for h in res.hits]


def _held_owners(core: LocalCore) -> set[str]:
    assert core.store.hot is not None
    t = core.store.hot.tables["traces"]
    return {str(r["owner_profile_id"]) for r in (t.rows[s] for s in range(t.n)) if r is not None}


async def test_the_budget_evicts_the_least_recent_namespace_and_results_stay_the_same(
    core: LocalCore,
) -> None:
    await _fill(core, ALPHA, "the alpha vault code is walrus nine")
    await _fill(core, BETA, "the beta vault code is heron four")
    hot = core.store.hot
    assert hot is not None
    await core.store.settle_hot()
    # two namespaces of ~0.7 MB each do not fit 1 MB: memory holds no private rows yet
    assert footprint(hot)["total"] <= 1_000_000
    assert _held_owners(core) == set()

    # alpha: served from LanceDB while it is not held, then loaded; the same hits either way
    cold = await _search(core, ALPHA, "alpha vault code")
    assert any("walrus" in s for _i, s in cold)
    await core.store.settle_hot()
    assert _held_owners(core) == {"alpha"}
    assert await _search(core, ALPHA, "alpha vault code") == cold

    # beta used now: alpha (least recent) leaves memory, beta comes in; nothing crosses over
    cold_b = await _search(core, BETA, "beta vault code")
    await core.store.settle_hot()
    assert _held_owners(core) == {"beta"}
    assert footprint(hot)["total"] <= 1_000_000
    hot_b = await _search(core, BETA, "beta vault code")
    assert hot_b == cold_b and any("heron" in s for _i, s in hot_b)
    assert not any("walrus" in s for _i, s in hot_b)
    assert await _search(core, ALPHA, "alpha vault code") == cold  # from LanceDB again


async def test_a_row_shared_while_its_owner_is_not_held_enters_memory(core: LocalCore) -> None:
    await _fill(core, ALPHA, "the alpha vault code is walrus nine")
    await _fill(core, BETA, "the beta vault code is heron four")
    await core.store.settle_hot()
    alpha_id = (await _search(core, ALPHA, "walrus"))[0][0]
    await _search(core, BETA, "beta vault code")
    await core.store.settle_hot()
    assert _held_owners(core) == {"beta"}
    hot = core.store.hot
    assert hot is not None
    assert alpha_id not in hot.tables["traces"].slot_of
    await core.store.update("traces", alpha_id, {"share_scope": "public"})
    assert alpha_id in hot.tables["traces"].slot_of  # shared rows are always held
    assert alpha_id in {i for i, _s in await _search(core, BETA, "walrus")}
