"""engine.recall: search validation, read-your-writes, per-namespace results, never failing a turn."""

from __future__ import annotations

import time

import pytest

from stratamem.contract.dtos import RetrievalQuery, RetrievalResult, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import commit, recall
from stratamem.core.engine.services import EngineServices

from .conftest import ALICE, BOB, now


def _q(text: str, **kw: object) -> RetrievalQuery:
    return RetrievalQuery(agent="hermes", query=text, **kw)  # type: ignore[arg-type]


def _wifi_turn() -> TurnResult:
    return TurnResult(
        agent="hermes",
        session_id="s",
        user_text="what is the wifi password at the cabin?",
        agent_text="the cabin wifi password is otter-1234",
        ts=now(),
    )


async def test_an_unknown_reason_is_bad_input(svc: EngineServices) -> None:
    with pytest.raises(StratamemError) as err:
        await recall.search(svc, _q("x", reason="because"), ALICE)
    assert err.value.code == "invalid_argument"


async def test_a_just_acknowledged_turn_is_found_by_its_namespace_only(svc: EngineServices) -> None:
    await commit.turn_end(svc, _wifi_turn(), ALICE)
    mine = await recall.search(svc, _q("cabin wifi password", deadline_at=now() + 20_000), ALICE)
    theirs = await recall.search(svc, _q("cabin wifi password", deadline_at=now() + 20_000), BOB)
    assert any("otter-1234" in h.snippet for h in mine.hits)
    assert not theirs.hits and "otter-1234" not in (theirs.injected_context or "")


async def test_a_reader_does_not_wait_for_another_namespaces_backlog(svc: EngineServices) -> None:
    """Recall waited (up to half its deadline) for every pending write of the home, so one
    namespace's capture backlog held another namespace's ``turn_start``; it now waits for the
    writes it can see, and still for its own."""
    await svc.journal.stop(0)  # the writer stops: what is acknowledged now stays pending
    await commit.turn_end(svc, _wifi_turn(), ALICE)
    t0 = time.monotonic()
    theirs = await recall.search(svc, _q("cabin wifi password", deadline_at=now() + 20_000), BOB)
    assert time.monotonic() - t0 < 5.0, "waited for another namespace's write (before: ~10 s)"
    assert not theirs.hits
    t0 = time.monotonic()
    mine = await recall.search(svc, _q("cabin wifi password", deadline_at=now() + 2_000), ALICE)
    assert time.monotonic() - t0 >= 0.5  # half the budget for her own pending write
    assert any("otter-1234" in h.snippet for h in mine.hits)  # found among the pending rows


async def test_a_past_deadline_is_an_empty_cut_off(svc: EngineServices) -> None:
    got = await recall.search(svc, _q("x", deadline_at=now() - 1), ALICE)
    assert got.cut_off and not got.hits and got.query.session_id


async def test_a_retrieval_failure_is_an_empty_result_with_an_event(svc: EngineServices) -> None:
    seen: list[str] = []
    svc.bus.add_observer(lambda e: seen.append(e.type))
    svc.store.close()  # storage gone under the reader: recall must still answer
    got = await recall.retrieve_safely(svc, _q("anything", session_id="s"), ALICE)
    assert isinstance(got, RetrievalResult) and not got.hits
    assert "retrieval.empty" in seen


async def test_without_a_learner_there_is_no_repair_block(svc: EngineServices) -> None:
    res = RetrievalResult(query=_q("x"), injected_context="ctx")
    assert (await recall.with_repair(svc, res, "s")).injected_context == "ctx"
