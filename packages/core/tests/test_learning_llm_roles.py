"""Separate LLM roles (memos-core §6.2): a configured ``skill_evolver`` answers the skill
crystallisation prompts and a configured ``l3_llm`` the world-model abstraction, each on its own
loopback server, while the main LLM gets every other task; blank roles fall back to the main LLM."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from stub_server import StubOpenAIServer

from stratamem.contract.dtos import ListQuery, Namespace
from stratamem.core import open_core
from stratamem.core.config import defaults
from stratamem.core.embedding import load_embedder
from stratamem.core.learning.prompts import task_of
from stratamem.core.llm.roles import load_role_llm

sys.path.insert(0, str(Path(__file__).parent))
from learning_stub import handler
from test_learning_scenario import _failures, _success

NS = Namespace(agent_kind="hermes")


@pytest.fixture(scope="module")
def embedder() -> Any:
    return load_embedder(defaults()["embedding"])


def tasks(server: StubOpenAIServer) -> list[str]:
    return [str(task_of(r.json.get("messages"))) for r in server.calls("chat")]


def role(server: StubOpenAIServer, model: str) -> dict[str, Any]:
    return {"provider": "openai_compatible", "endpoint": server.url, "model": model}


async def test_skill_evolver_and_l3_llm_get_their_prompts_and_the_main_llm_the_rest(
    tmp_path: Path, embedder: Any
) -> None:
    with StubOpenAIServer() as main, StubOpenAIServer() as l3, StubOpenAIServer() as evolver:
        for s in (main, l3, evolver):
            s.handler = handler
        async with open_core(
            tmp_path,
            embedder=embedder,
            llm__provider="openai_compatible",
            llm__endpoint=main.url,
            llm__model="main-model",
            l3_llm=role(l3, "l3-model"),
            skill_evolver=role(evolver, "evolver-model"),
        ) as core:
            for i in range(6):
                await _success(core, i)
            await _failures(core)
            await core.flush()
            assert not core.learner.failures, core.learner.failures
            assert await core.list_skills(ListQuery(namespace=NS))
            assert await core.list_world_models(ListQuery(namespace=NS))
    assert tasks(evolver) and set(tasks(evolver)) == {"skill.crystallize"}
    assert {r.json["model"] for r in evolver.calls("chat")} == {"evolver-model"}
    assert tasks(l3) and set(tasks(l3)) == {"l3.abstract"}
    main_tasks = set(tasks(main))
    assert {"reward.score", "l2.induce"} <= main_tasks
    assert not main_tasks & {"skill.crystallize", "l3.abstract"}


def test_a_blank_role_is_the_main_llm_and_a_configured_one_is_its_own() -> None:
    main = object()
    cfg = defaults()
    assert load_role_llm(cfg, "skill_evolver", main) is main  # type: ignore[arg-type]
    assert load_role_llm(cfg, "l3_llm", None) is None
    cfg["skill_evolver"].update(
        provider="openai_compatible", endpoint="http://127.0.0.1:9/v1", model="m"
    )
    got = load_role_llm(cfg, "skill_evolver", main)  # type: ignore[arg-type]
    assert got is not main and got is not None and got.model == "m"
