"""Feedback (memos-core §5.9) and the mode default (issue 6 item 11): the deterministic classifier,
a new user turn scoring the previous turn as implicit feedback, feedback experiences that tier-2
retrieval returns, and full mode switching on only for a configured LLM provider."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from stub_server import StubOpenAIServer

from stratamem.contract.dtos import (
    FeedbackInput,
    ListQuery,
    Namespace,
    RetrievalQuery,
    TurnInput,
    TurnResult,
)
from stratamem.core import open_core
from stratamem.core.learning.feedback import classify_feedback, implicit_feedback
from stratamem.core.learning.mode import resolve_mode

NS = Namespace(agent_kind="hermes")


def now() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize(
    ("text", "shape", "conf"),
    [
        ("Use pnpm instead of npm.", "preference", 0.8),
        ("prefer ruff over flake8", "preference", 0.8),
        ("用pnpm代替npm。", "preference", 0.8),
        ("No, that's wrong", "correction", 0.75),
        ("next time use the staging bucket", "preference", 0.55),
        ("it still fails with the same error", "negative", 0.75),
        ("always run the tests before pushing", "constraint", 0.7),
        ("I don't understand what you changed", "confusion", 0.7),
        ("thanks, that worked!", "positive", 0.75),
        ("now add a changelog entry", "instruction", 0.55),
        ("the weather is mild today", "unknown", 0.3),
        ("", "unknown", 0.0),
    ],
)
def test_the_classifier_recognises_each_feedback_shape(text: str, shape: str, conf: float) -> None:
    fc = classify_feedback(text)
    assert (fc.shape, fc.confidence) == (shape, conf)


def test_preference_captures_what_to_prefer_and_avoid() -> None:
    fc = classify_feedback("Use docker compose instead of docker run --privileged.")
    assert fc.prefer == "docker compose" and fc.avoid == "docker run --privileged"
    assert implicit_feedback("thanks, that fixed it") is not None
    assert implicit_feedback("now add a changelog entry") is None  # not feedback


def test_mode_is_full_only_for_a_configured_provider_and_explicit_setting_wins() -> None:
    cfg = {"llm": {"provider": "openai_compatible"}}
    assert resolve_mode({"llm": {"provider": "openai_compatible"}}, cfg)[0] is False
    host = resolve_mode({"llm": {"provider": "host"}}, {"llm": {"provider": "host"}})
    assert host[0] is True and "host" in host[1]
    assert resolve_mode({}, {"llm": {"provider": ""}}) == (
        True,
        "no LLM provider configured",
    )
    explicit = {"algorithm": {"lightweight_memory": {"enabled": True}}, **cfg}
    assert resolve_mode(explicit, cfg)[0] is True


async def test_an_llm_provider_in_config_yaml_switches_full_mode_on(tmp_path: Path) -> None:
    with StubOpenAIServer() as server:
        (tmp_path / "config.yaml").write_text(
            f"llm:\n  provider: openai_compatible\n  endpoint: {server.url}\n  model: stub\n"
        )
        async with open_core(tmp_path, embedding__provider="none") as core:
            h = await core.health()
            assert h.mode == "full" and "llm.provider=openai_compatible" in h.mode_reason
    async with open_core(tmp_path / "plain", embedding__provider="none") as core:
        h = await core.health()
        assert h.mode == "lightweight" and "no LLM provider" in h.mode_reason
    async with open_core(
        tmp_path / "lent", embedding__provider="none", llm__provider="host"
    ) as core:
        assert (await core.health()).mode == "lightweight"


async def test_a_thankful_next_turn_is_implicit_feedback_that_scores_the_previous_episode(
    tmp_path: Path,
) -> None:
    async with open_core(
        tmp_path, embedding__provider="none", algorithm__lightweight_memory__enabled=False
    ) as core:
        t = now()
        await core.turn_start(
            TurnInput(
                agent="hermes",
                session_id="s",
                user_text="Rotate the staging TLS certificate and reload nginx on the web hosts",
                ts=t,
            )
        )
        ack = await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s",
                agent_text="Issued a new certificate, copied it to the hosts and reloaded nginx.",
                ts=t + 3,
            )
        )
        await core.turn_start(
            TurnInput(agent="hermes", session_id="s", user_text="thanks, that worked!", ts=t + 10)
        )
        fb = core.db.query("SELECT * FROM feedback WHERE episode_id=?", (ack.episode_id,))
        assert len(fb) == 1 and fb[0]["channel"] == "implicit" and fb[0]["polarity"] == "positive"
        await core.close_session("s")
        await core.flush()
        ep = core.db.query("SELECT r_task, meta_json FROM episodes WHERE id=?", (ack.episode_id,))
        assert ep[0]["r_task"] == 1.0
        assert json.loads(ep[0]["meta_json"])["reward"]["source"] == "feedback"
        trace = await core.get_trace(ack.trace_id, NS)
        assert trace is not None and trace.value > 0 and trace.priority > 0


async def test_unscored_traces_keep_their_priority_in_full_mode(tmp_path: Path) -> None:
    async with open_core(
        tmp_path, embedding__provider="none", algorithm__lightweight_memory__enabled=False
    ) as core:
        t = now()
        await core.turn_start(
            TurnInput(
                agent="hermes",
                session_id="s",
                user_text="Summarise the incident report from last night's outage",
                ts=t,
            )
        )
        ack = await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s",
                agent_text="The outage came from an expired certificate on the load balancer.",
                ts=t + 3,
            )
        )
        await core.close_session("s")
        await core.flush()
        trace = await core.get_trace(ack.trace_id, NS)
        assert trace is not None and trace.priority == 0.5  # not zeroed (memos-core §9)
        meta = json.loads(
            core.db.query("SELECT meta_json FROM episodes WHERE id=?", (ack.episode_id,))[0][0]
        )
        assert meta["reward"] == {"skipped": True, "reason": "no_signal", "trigger": "flush"}


async def test_actionable_feedback_becomes_an_experience_returned_by_retrieval(
    tmp_path: Path,
) -> None:
    async with open_core(tmp_path, algorithm__lightweight_memory__enabled=False) as core:
        t = now()
        await core.turn_start(
            TurnInput(agent="hermes", session_id="s", user_text="Install the frontend deps", ts=t)
        )
        ack = await core.turn_end(
            TurnResult(agent="hermes", session_id="s", agent_text="Ran npm install.", ts=t + 2)
        )
        await core.submit_feedback(
            FeedbackInput(
                episode_id=ack.episode_id,
                polarity="negative",
                magnitude=0.9,
                rationale="Use pnpm instead of npm for the frontend packages.",
                namespace=NS,
            )
        )
        await core.flush()
        pols = await core.list_policies(ListQuery(namespace=NS))
        assert len(pols) == 1 and pols[0].source_feedback_ids and pols[0].status == "active"
        assert pols[0].guidance.preference == ("pnpm",) and pols[0].guidance.anti_pattern == (
            "npm for the frontend packages",
        )
        res = await core.search(
            RetrievalQuery(
                agent="hermes", query="which package manager for frontend packages", namespace=NS
            )
        )
        assert any(h.ref_kind == "experience" and h.ref_id == pols[0].id for h in res.hits)


async def test_an_episode_left_unscored_by_a_restart_is_scored_after_reopening(
    tmp_path: Path,
) -> None:
    opts = {"embedding__provider": "none", "algorithm__lightweight_memory__enabled": False}
    async with open_core(tmp_path, **opts) as core:
        t = now()
        await core.turn_start(
            TurnInput(
                agent="hermes",
                session_id="s",
                user_text="Rotate the staging TLS certificate and reload nginx on the web hosts",
                ts=t,
            )
        )
        ack = await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s",
                agent_text="Issued a new certificate, copied it to the hosts and reloaded nginx.",
                ts=t + 3,
            )
        )
        await core.close_session("s")  # topic end: the 30 s feedback window opens ...
        await core.learner._queue.join()
        assert (
            core.db.query("SELECT r_task FROM episodes WHERE id=?", (ack.episode_id,))[0][0] is None
        )
        core.db.call(  # ... and the thumbs-up lands in the store right before a crash
            lambda c: c.execute(
                "INSERT INTO feedback(id, ts, episode_id, channel, polarity, magnitude)"
                " VALUES ('fb_x', ?, ?, 'explicit', 'positive', 1.0)",
                (now(), ack.episode_id),
            )
        )
        core.learner._windows.clear()  # the window dies with the process
    async with open_core(tmp_path, **opts) as core:
        await core.flush()
        assert (
            core.db.query("SELECT r_task FROM episodes WHERE id=?", (ack.episode_id,))[0][0] == 1.0
        )
