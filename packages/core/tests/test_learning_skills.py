"""Skills (memos-core §5.6): trials recorded by get_skill(record_trial=True) resolve at the episode's
next reward and move η and status; the deterministic verifier rejects a crystallised draft whose
tools the evidence never used."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.dtos import (
    FeedbackInput,
    Namespace,
    SkillGetOptions,
    ToolCall,
    TurnInput,
    TurnResult,
)
from stratamem.core import open_core
from stratamem.core.learning.skills import run_skills, verify
from stratamem.core.storage.ownership import Scope

sys.path.insert(0, str(Path(__file__).parent))
from learning_stub import answer, payload_of

NS = Namespace(agent_kind="hermes")
OWNER = Scope.owned(Namespace(agent_kind="hermes", profile_id="default"))


def now() -> int:
    return int(time.time() * 1000)


def _row(kind: str, **extra: Any) -> dict[str, Any]:
    ts = now()
    base = {
        "owner_agent_kind": "hermes",
        "owner_profile_id": "default",
        "owner_workspace_id": None,
        "share_scope": "private",
        "share_target": None,
        "shared_at": None,
        "created_at": ts,
        "updated_at": ts,
        "edited_at": None,
        "vec": None,
    }
    if kind == "skill":
        base.update(
            name="rotate_certs",
            status="candidate",
            invocation_guide="# Rotate certs",
            guidance_json="{}",
            evidence_anchors=[],
            eta=0.5,
            support=1,
            gain=0.3,
            trials_attempted=0,
            trials_passed=0,
            source_policy_ids=[],
            source_world_model_ids=[],
            version=1,
            usage_count=0,
            last_used_at=None,
            search_text="rotate certs",
        )
    return {**base, **extra}


async def _episode_with_feedback(core: Any, session: str, skill_id: str, polarity: str) -> str:
    t = now()
    await core.turn_start(
        TurnInput(
            agent="hermes",
            session_id=session,
            user_text="Rotate the staging TLS certificate and reload nginx on the web hosts",
            ts=t,
            namespace=NS,
        )
    )
    await core.get_skill(skill_id, SkillGetOptions(record_trial=True, session_id=session), NS)
    ack = await core.turn_end(
        TurnResult(
            agent="hermes",
            session_id=session,
            agent_text="Used the rotate_certs skill: new certificate issued and nginx reloaded.",
            ts=t + 3,
            namespace=NS,
        )
    )
    await core.submit_feedback(
        FeedbackInput(episode_id=ack.episode_id, polarity=polarity, magnitude=1.0, namespace=NS)
    )
    await core.close_session(session)
    await core.flush()
    return ack.episode_id


@pytest.mark.parametrize(
    ("eta", "polarity", "want_eta", "want_status"),
    [(0.5, "positive", 0.75, "active"), (0.15, "negative", 0.075, "archived")],
)
async def test_a_trial_resolves_at_the_next_reward_and_moves_eta(
    tmp_path: Path, eta: float, polarity: str, want_eta: float, want_status: str
) -> None:
    async with open_core(
        tmp_path, embedding__provider="none", algorithm__lightweight_memory__enabled=False
    ) as core:
        seen: list[tuple[str, dict[str, Any]]] = []
        core.bus.add_observer(lambda e: seen.append((e.type, e.payload)))
        await core.learner.ctx.upsert("skills", [_row("skill", id="sk_t1", eta=eta)])
        episode = await _episode_with_feedback(core, "s", "sk_t1", polarity)
        trials = core.db.query("SELECT * FROM skill_trials WHERE skill_id='sk_t1'")
        assert len(trials) == 1 and trials[0]["episode_id"] == episode
        assert trials[0]["status"] == ("pass" if polarity == "positive" else "fail")
        skill = await core.get_skill("sk_t1", namespace=NS)
        assert skill is not None and abs(skill.eta - want_eta) < 1e-6
        assert skill.status == want_status and skill.trials_attempted == 1
        assert any(t == "skill.eta_updated" and p["cause"] == "trial" for t, p in seen)
        assert (want_status == "archived") == any(t == "skill.archived" for t, _ in seen)


def test_the_verifier_checks_tool_coverage_and_resonance() -> None:
    evidence = [
        {
            "user_text": "rotate the staging certificate",
            "agent_text": "issued certificate, reloaded nginx",
            "tool_calls_json": json.dumps([{"name": "certbot"}]),
        }
    ]
    draft = {
        "tools": ["certbot"],
        "summary": "rotate staging certificate",
        "steps": ["reload nginx"],
    }
    assert verify(draft, evidence, 0.5, 0.5) is None
    assert verify({**draft, "tools": ["kubectl", "helm"]}, evidence, 0.5, 0.5) == "tool_coverage"
    assert (
        verify({**draft, "summary": "bake bread", "steps": ["knead dough"]}, evidence, 0.5, 0.5)
        == "resonance"
    )


async def test_a_draft_using_unseen_tools_fails_verification(tmp_path: Path) -> None:
    def handler(kind: str, body: Any) -> StubAnswer | None:
        from stratamem.core.learning.prompts import task_of

        task = task_of(body.get("messages"))
        got = answer(task, payload_of(body))
        if task == "skill.crystallize":
            got["tools"] = ["kubectl"]
        return StubAnswer(content=json.dumps(got))

    with StubOpenAIServer() as server:
        server.handler = handler
        async with open_core(
            tmp_path,
            embedding__provider="none",
            llm__provider="openai_compatible",
            llm__endpoint=server.url,
            llm__model="stub",
        ) as core:
            seen: list[tuple[str, dict[str, Any]]] = []
            core.bus.add_observer(lambda e: seen.append((e.type, e.payload)))
            t = now()
            await core.turn_start(
                TurnInput(
                    agent="hermes",
                    session_id="s",
                    user_text="Deploy the web service to staging",
                    ts=t,
                )
            )
            ack = await core.turn_end(
                TurnResult(
                    agent="hermes",
                    session_id="s",
                    agent_text="Deployed the web service to staging with docker compose.",
                    ts=t + 2,
                    tool_calls=(ToolCall(name="docker.compose_up", input={}, output="ok"),),
                )
            )
            await core.submit_feedback(
                FeedbackInput(
                    episode_id=ack.episode_id, polarity="positive", magnitude=1.0, namespace=NS
                )
            )
            await core.close_session("s")
            await core.flush()
            policy = {
                "id": "po_manual",
                "title": "Deploy staging",
                "trigger": "deploy the web service to staging",
                "procedure": "docker compose up",
                "status": "active",
                "gain": 0.4,
                "support": 2,
                "experience_type": "success_pattern",
                "evidence_polarity": "positive",
                "skill_eligible": True,
                "guidance_json": "{}",
                "source_episode_ids": [ack.episode_id],
                "source_feedback_ids": [],
                "source_trace_ids": [],
                "search_text": "deploy staging",
            }
            await core.learner.ctx.upsert("policies", [_row("policy", **policy)])
            res = await run_skills(core.learner.ctx, OWNER)
            assert res.failed == {"po_manual": "tool_coverage"} and not res.crystallized
            failed = {
                "policy_id": "po_manual",
                "reason": "tool_coverage",
                "namespace": "hermes/default",  # the event says whose policy it is
            }
            assert ("skill.failed", failed) in seen
