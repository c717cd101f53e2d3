"""engine.feedback: validation, storage, and a trace's value from its explicit feedback."""

from __future__ import annotations

import pytest

from stratamem.contract.dtos import FeedbackInput, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import commit, feedback, traces
from stratamem.core.engine.services import EngineServices

from .conftest import ALICE, BOB, now


def test_value_is_magnitude_weighted_polarity() -> None:
    assert feedback.trace_value([]) is None
    assert feedback.trace_value([("neutral", 1.0)]) is None
    assert feedback.trace_value([("positive", 1.0)]) == 1.0
    assert feedback.trace_value([("positive", 1.0), ("negative", 0.5)]) == pytest.approx(1 / 3)


async def test_bad_feedback_is_refused(svc: EngineServices) -> None:
    for bad in (
        FeedbackInput(channel="shout"),
        FeedbackInput(polarity="meh"),
        FeedbackInput(magnitude=2.0),
        FeedbackInput(magnitude=True),  # type: ignore[arg-type]
    ):
        with pytest.raises(StratamemError) as err:
            await feedback.submit_feedback(svc, bad, ALICE)
        assert err.value.code == "invalid_argument"


async def test_feedback_sets_the_traces_value_for_its_owner(svc: EngineServices) -> None:
    r = TurnResult(agent="hermes", session_id="s", user_text="q", agent_text="a", ts=now())
    tid = (await commit.turn_end(svc, r, ALICE)).trace_id
    with pytest.raises(StratamemError) as err:  # bob cannot see (or rate) alice's trace
        await feedback.submit_feedback(svc, FeedbackInput(trace_id=tid, polarity="negative"), BOB)
    assert err.value.code == "trace_not_found"
    fb = await feedback.submit_feedback(
        svc, FeedbackInput(trace_id=tid, polarity="negative", magnitude=1.0), ALICE
    )
    assert fb.episode_id and fb.trace_id == tid
    got = await traces.get_trace(svc, tid, ALICE)
    assert got is not None and got.value == -1.0 and got.priority == 1.0
    stored = await svc.run_db(lambda: svc.db.query("SELECT owner_profile_id FROM feedback"))
    assert [r["owner_profile_id"] for r in stored] == ["alice"]
