"""The host kit's memory tools against a real core: the same answers on the async core (OpenClaw,
DSH) and on the blocking one from a worker thread (Hermes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stratamem.contract.dtos import Namespace, TurnInput, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.contract.hostkit.tools import ToolContext, call_tool, call_tool_blocking
from stratamem.core import open_core
from stratamem.core.blocking import BlockingCore

NS = Namespace(agent_kind="hermes", profile_id="kit")
CTX = ToolContext(agent="hermes", namespace=NS, session_id="kit-1", max_chars=200)
FACT = "the billing cron runs on worker-7 at 04:15 " + "x" * 400


async def test_search_get_timeline_and_misses_on_a_real_core(tmp_path: Path) -> None:
    async with open_core(tmp_path, embedding__provider="none") as core:
        ts = int(time.time() * 1000)
        route = await core.turn_start(
            TurnInput(agent="hermes", session_id="kit-1", user_text=FACT, ts=ts, namespace=NS)
        )
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="kit-1",
                agent_text="noted",
                ts=ts,
                namespace=NS,
                episode_id=route.query.episode_id,
            )
        )
        found = await call_tool(core, "memos_search", {"query": "billing cron worker-7"}, CTX)
        assert found.text.startswith("Found ")
        hit = found.details["hits"][0]
        assert len(hit["snippet"]) <= 200  # the host's cap
        got = await call_tool(core, "memos_get", {"id": hit["refId"]}, CTX)
        assert got.details["found"] and "04:15" in got.details["body"]
        episode = got.details["meta"]["episode_id"]
        steps = await call_tool(core, "memos_timeline", {"episodeId": episode}, CTX)
        assert [t["id"] for t in steps.details["traces"]] == [hit["refId"]]
        # misses are answers, not failures
        assert (await call_tool(core, "memos_get", {"id": "tr-none"}, CTX)).details == {
            "found": False,
            "kind": "trace",
            "id": "tr-none",
        }
        assert not (await call_tool(core, "memos_skill_get", {"id": "sk-none"}, CTX)).details[
            "found"
        ]
        empty = await call_tool(core, "memos_timeline", {"episodeId": "ep-none"}, CTX)
        assert empty.details["traces"] == []
        assert (await call_tool(core, "memos_skill_list", {}, CTX)).text == "No skills found."
        # another namespace sees nothing of it
        other = ToolContext(
            agent="hermes", namespace=Namespace(agent_kind="hermes", profile_id="b")
        )
        assert not (await call_tool(core, "memos_get", {"id": hit["refId"]}, other)).details[
            "found"
        ]
        with pytest.raises(StratamemError) as err:
            await call_tool(core, "memos_search", {"query": "x", "maxResults": 500}, CTX)
        assert err.value.code == "invalid_argument"


def test_the_blocking_core_gives_the_same_answers(tmp_path: Path) -> None:
    with BlockingCore.open(tmp_path, embedding__provider="none") as core:
        ts = int(time.time() * 1000)
        core.turn_start(
            TurnInput(agent="hermes", session_id="kit-1", user_text=FACT, ts=ts, namespace=NS)
        )
        core.turn_end(
            TurnResult(agent="hermes", session_id="kit-1", agent_text="noted", ts=ts, namespace=NS)
        )
        found = call_tool_blocking(core, "memos_search", {"query": "worker-7 cron"}, CTX)
        assert found.details["hits"]
        assert "worker-7" in found.as_dict()["text"]
