"""Issue 6 scenario: ten episodes where the same docker tool sequence succeeds with positive feedback,
three where a privileged variant fails. With the scripted LLM over real HTTP a policy is induced and
becomes active, a world model and a skill exist, the failing variant is an anti-pattern, and the next
related turn's injected context carries the skill and the guidance. Without an LLM the same run is
clean, creates no policies and keeps every trace retrievable."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from stub_server import StubOpenAIServer

from stratamem.contract.dtos import (
    FeedbackInput,
    ListQuery,
    Namespace,
    ToolCall,
    ToolOutcome,
    TurnInput,
    TurnResult,
)
from stratamem.core import open_core
from stratamem.core.config import defaults
from stratamem.core.embedding import load_embedder

sys.path.insert(0, str(Path(__file__).parent))
from learning_stub import handler

NS = Namespace(agent_kind="hermes")
ASKS = [
    "Deploy the web service to staging with docker compose",
    "Please deploy our web service to the staging environment",
    "Ship the latest web service build to staging",
    "Roll out the web service on staging using docker",
    "Can you deploy the web app service to staging again",
]
PRIVILEGED = "docker run --privileged -p 80:80 web:latest"


@pytest.fixture(scope="module")
def embedder() -> Any:
    return load_embedder(defaults()["embedding"])


def now() -> int:
    return int(time.time() * 1000)


async def _success(core: Any, i: int) -> str:
    sid = f"ok-{i}"
    t = now()
    await core.turn_start(TurnInput(agent="hermes", session_id=sid, user_text=ASKS[i % 5], ts=t))
    ack = await core.turn_end(
        TurnResult(
            agent="hermes",
            session_id=sid,
            agent_text="Built the image and started it with docker compose; staging /health is OK.",
            ts=t + 5,
            tool_calls=(
                ToolCall(
                    name="docker.build", input={"tag": "web:latest"}, output="built web:latest"
                ),
                ToolCall(name="docker.compose_up", input={"args": "-d"}, output="web started"),
            ),
        )
    )
    await core.submit_feedback(
        FeedbackInput(
            episode_id=ack.episode_id,
            polarity="positive",
            magnitude=1.0,
            rationale="great, it works",
            namespace=NS,
        )
    )
    await core.close_session(sid)
    return ack.episode_id


async def _failures(core: Any) -> list[str]:
    eps = []
    for i in range(3):
        t = now()
        await core.turn_start(
            TurnInput(
                agent="hermes",
                session_id="bad",
                user_text=f"Deploy the web service to staging, attempt {i + 1}",
                ts=t,
            )
        )
        ack = await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="bad",
                agent_text=f"I ran {PRIVILEGED} but it failed with permission denied.",
                ts=t + 5,
                tool_calls=(
                    ToolCall(
                        name="docker.run",
                        input={"cmd": PRIVILEGED},
                        output="Error: permission denied (exit code 1)",
                        error_code="EXIT_1",
                    ),
                ),
            )
        )
        await core.record_tool_outcome(
            ToolOutcome(
                session_id="bad", tool="docker.run", success=False, episode_id=ack.episode_id
            )
        )
        await core.submit_feedback(
            FeedbackInput(
                episode_id=ack.episode_id,
                polarity="negative",
                magnitude=1.0,
                rationale="that failed again",
                namespace=NS,
            )
        )
        eps.append(ack.episode_id)
    await core.close_session("bad")
    return eps


async def test_learning_loop_induces_policy_world_model_skill_and_guides_the_next_turn(
    tmp_path: Path, embedder: Any
) -> None:
    with StubOpenAIServer() as server:
        server.handler = handler
        async with open_core(
            tmp_path,
            embedder=embedder,
            llm__provider="openai_compatible",
            llm__endpoint=server.url,
            llm__model="stub",
        ) as core:
            assert (await core.health()).mode == "full"
            seen: list[str] = []
            core.bus.add_observer(lambda e: seen.append(e.type))
            for i in range(10):
                await _success(core, i)
            await _failures(core)
            await core.flush()
            assert not core.learner.failures, core.learner.failures

            policies = await core.list_policies(ListQuery(namespace=NS, limit=50))
            induced = [p for p in policies if not p.source_feedback_ids]
            assert induced and induced[0].status == "active"
            assert induced[0].gain > 0.02 and induced[0].support >= 10
            assert len(induced[0].source_episode_ids) >= 10
            wms = await core.list_world_models(ListQuery(namespace=NS))
            assert wms and set(wms[0].policy_ids) & {p.id for p in induced}
            skills = await core.list_skills(ListQuery(namespace=NS))
            assert skills and skills[0].eta >= 0.1
            assert any(PRIVILEGED in line for line in skills[0].guidance.anti_pattern)
            for t in (
                "reward.computed",
                "trace.value_updated",
                "policy.trace_associated",
                "policy.induced",
                "policy.revised",
                "world_model.abstracted",
                "world_model.revised",
                "skill.crystallized",
                "repair.generated",
            ):
                assert t in seen, t

            res = await core.turn_start(
                TurnInput(
                    agent="hermes",
                    session_id="next",
                    user_text="How do I deploy the web service to staging?",
                    ts=now(),
                    namespace=NS,
                )
            )
            ctx = res.injected_context
            assert "## Candidate skills" in ctx and skills[0].name in ctx
            assert "## Decision guidance" in ctx and PRIVILEGED in ctx
            assert any(h.ref_kind == "skill" for h in res.hits)


async def test_without_an_llm_the_scenario_runs_clean_creates_no_policies_keeps_traces(
    tmp_path: Path, embedder: Any
) -> None:
    async with open_core(
        tmp_path, embedder=embedder, algorithm__lightweight_memory__enabled=False
    ) as core:
        h = await core.health()
        assert h.mode == "full" and "lightweight_memory.enabled=false" in h.mode_reason
        episodes = [await _success(core, i) for i in range(10)]
        episodes += await _failures(core)
        await core.flush()
        assert not core.learner.failures, core.learner.failures
        assert await core.list_policies(ListQuery(namespace=NS)) == []
        assert await core.list_world_models(ListQuery(namespace=NS)) == []
        assert await core.list_skills(ListQuery(namespace=NS)) == []
        traces = await core.list_traces(ListQuery(namespace=NS, limit=200))
        assert len(traces) >= 13
        for t in traces:
            assert await core.get_trace(t.id, NS) is not None
        ok = [t for t in traces if t.session_id.startswith("ok-")]
        # explicit thumbs-up is the reward: V > 0 and a usable priority on every success step
        assert ok and all(t.value > 0 and t.priority > 0 for t in ok)
        res = await core.turn_start(
            TurnInput(
                agent="hermes",
                session_id="next",
                user_text="How do I deploy the web service to staging?",
                ts=now(),
                namespace=NS,
            )
        )
        assert any(h.ref_kind in ("trace", "episode") for h in res.hits)
