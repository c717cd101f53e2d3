"""Every LLM fallback of the learning stages over real loopback HTTP: valid JSON, malformed JSON
(retried, then the feedback heuristic), a slow answer past the timeout, a 429 that is retried, and a
401 that opens the circuit breaker so later stages skip the provider."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.dtos import FeedbackInput, Namespace, TurnInput, TurnResult
from stratamem.core import open_core
from stratamem.core.learning.prompts import task_of

sys.path.insert(0, str(Path(__file__).parent))
from learning_stub import answer, payload_of

NS = Namespace(agent_kind="hermes")
GOOD = json.dumps({"goal_achievement": 0.2, "process_quality": 0.2, "user_satisfaction": 0.2})


def now() -> int:
    return int(time.time() * 1000)


class Script:
    """Valid answers for every task except ``reward.score``, which is served from a script."""

    def __init__(self, reward_answers: list[StubAnswer]) -> None:
        self.reward = list(reward_answers)
        self.reward_calls = 0

    def __call__(self, kind: str, body: Any) -> StubAnswer | None:
        if kind != "chat":
            return None
        task = task_of(body.get("messages"))
        if task == "reward.score":
            self.reward_calls += 1
            if self.reward:
                return self.reward.pop(0)
            return StubAnswer(content=GOOD)
        return StubAnswer(content=json.dumps(answer(task, payload_of(body))))


async def _scored_episode(core: Any, session: str) -> dict[str, Any]:
    t = now()
    await core.turn_start(
        TurnInput(
            agent="hermes",
            session_id=session,
            user_text="Rotate the staging TLS certificate and reload nginx on the web hosts",
            ts=t,
        )
    )
    ack = await core.turn_end(
        TurnResult(
            agent="hermes",
            session_id=session,
            agent_text="Issued a new certificate, copied it to the web hosts and reloaded nginx.",
            ts=t + 4,
        )
    )
    await core.submit_feedback(
        FeedbackInput(episode_id=ack.episode_id, polarity="positive", magnitude=1.0, namespace=NS)
    )
    await core.close_session(session)
    await core.flush()
    rows = core.db.query("SELECT r_task, meta_json FROM episodes WHERE id=?", (ack.episode_id,))
    return {"r": rows[0]["r_task"], **json.loads(rows[0]["meta_json"])["reward"]}


CASES = {
    # name: (answers for reward.score, expected source, expected r, expected reward.score calls)
    "valid_json": ([StubAnswer(content=GOOD)], "llm", 0.2, 1),
    "malformed_then_heuristic": (
        [StubAnswer(content="certainly! here you go"), StubAnswer(content='{"goal": 1}')],
        "feedback",
        1.0,
        2,  # one malformed-output retry (learning.json_retries = 1), then the thumbs-up heuristic
    ),
    "malformed_then_valid": ([StubAnswer(content="nope"), StubAnswer(content=GOOD)], "llm", 0.2, 2),
    "rate_limited_then_ok": ([StubAnswer(status=429), StubAnswer(content=GOOD)], "llm", 0.2, 2),
    "slow_past_timeout": ([StubAnswer(content=GOOD, delay_s=2.5)], "feedback", 1.0, 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_reward_scoring_over_http_falls_back_deterministically(
    case: str, tmp_path: Path
) -> None:
    answers, source, r, calls = CASES[case]
    script = Script(answers)
    with StubOpenAIServer() as server:
        server.handler = script
        async with open_core(
            tmp_path,
            embedding__provider="none",
            llm__provider="openai_compatible",
            llm__endpoint=server.url,
            llm__model="stub",
            llm__max_retries=1,
            learning__llm_timeout_ms=1000,
        ) as core:
            got = await _scored_episode(core, "s1")
            assert got["source"] == source and abs(got["r"] - r) < 1e-6
            assert script.reward_calls == calls
            assert not core.learner.failures


async def test_a_401_opens_the_breaker_and_later_stages_take_their_fallbacks(
    tmp_path: Path,
) -> None:
    script = Script([StubAnswer(status=401)])
    with StubOpenAIServer() as server:
        server.handler = script
        async with open_core(
            tmp_path,
            embedding__provider="none",
            llm__provider="openai_compatible",
            llm__endpoint=server.url,
            llm__model="stub",
            llm__max_retries=3,
        ) as core:
            first = await _scored_episode(core, "s1")
            before = len(server.calls("chat"))
            second = await _scored_episode(core, "s2")
            assert first["source"] == "feedback" and second["source"] == "feedback"
            assert script.reward_calls == 1  # a terminal error is never retried
            assert len(server.calls("chat")) == before  # breaker open: no further HTTP calls
            assert not core.learner.failures
