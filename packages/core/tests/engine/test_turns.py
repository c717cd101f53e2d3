"""engine.turns: validation, routing to an episode, the user turn record, turn-key idempotency."""

from __future__ import annotations

import pytest

from stratamem.contract.dtos import TurnInput
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import sessions, turns
from stratamem.core.engine.services import EngineServices

from .conftest import ALICE, now


def _turn(text: str, key: str | None = None, **kw: object) -> TurnInput:
    return TurnInput(agent="hermes", session_id="s", user_text=text, ts=now(), turn_key=key, **kw)  # type: ignore[arg-type]


async def test_bad_turn_input_is_refused_before_anything_is_written(svc: EngineServices) -> None:
    with pytest.raises(StratamemError) as err:
        await turns.prepare_turn(svc, _turn(""), ALICE)
    assert err.value.code == "invalid_argument"
    with pytest.raises(StratamemError):
        await turns.prepare_turn(
            svc, TurnInput(agent="hermes", session_id="s", user_text="x", ts=-1), ALICE
        )
    assert await sessions.session_row(svc, "s") is None


async def test_route_opens_an_episode_and_records_the_user_turn(svc: EngineServices) -> None:
    route = await turns.prepare_turn(svc, _turn("how do I rotate the logs?"), ALICE)
    assert route.relation == "bootstrap" and route.episode_id
    got = await sessions.episode_turns(svc, route.episode_id)
    assert [(t["role"], t["content"]) for t in got] == [("user", "how do I rotate the logs?")]
    row = await sessions.episode_row(svc, route.episode_id)
    assert row is not None and row["owner_profile_id"] == "alice"


async def test_lightweight_mode_starts_a_new_episode_per_turn(svc: EngineServices) -> None:
    first = await turns.prepare_turn(svc, _turn("first question"), ALICE)
    second = await turns.prepare_turn(svc, _turn("second question"), ALICE)
    assert first.episode_id != second.episode_id and second.relation == "new_task"
    row = await sessions.episode_row(svc, first.episode_id or "")
    assert row is not None and row["status"] == "closed"


async def test_same_turn_key_routes_once_and_a_changed_text_conflicts(svc: EngineServices) -> None:
    a = await turns.prepare_turn(svc, _turn("question", "k1"), ALICE)
    b = await turns.prepare_turn(svc, _turn("question", "k1"), ALICE)
    assert a.episode_id == b.episode_id
    assert len(await sessions.episode_turns(svc, a.episode_id or "")) == 1
    with pytest.raises(StratamemError) as err:
        await turns.prepare_turn(svc, _turn("another question", "k1"), ALICE)
    assert err.value.code == "conflict"


async def test_turn_start_shares_one_result_per_turn_key(svc: EngineServices) -> None:
    starts = turns.TurnStarts()
    r1 = await turns.turn_start(svc, starts, _turn("where is the otter den?", "k"), ALICE)
    r2 = await turns.turn_start(svc, starts, _turn("where is the otter den?", "k"), ALICE)
    assert r1 is r2 and r1.query.namespace == ALICE
    with pytest.raises(StratamemError):
        await turns.turn_start(svc, starts, _turn("something else", "k"), ALICE)


async def test_a_past_deadline_routes_nothing(svc: EngineServices) -> None:
    r = await turns.turn_start(svc, turns.TurnStarts(), _turn("late", deadline_at=now() - 1), ALICE)
    assert r.cut_off and await sessions.session_row(svc, "s") is None


def test_chitchat_skips_recall_and_a_failing_classifier_does_not() -> None:
    assert turns.skip_recall("thanks!", turns.intent_of("thanks!"), None)
    assert not turns.skip_recall("x", None, None)
