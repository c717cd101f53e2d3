"""Issue 3 "Done when": three sessions of distinct facts (with tool calls) through turn_start/turn_end
with the REAL default embedder; a later paraphrased question recalls the right trace in the top 3 of
turn_start's injected context; timeline replays an episode in order."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.dtos import Namespace, ToolCall, TurnInput, TurnResult
from stratamem.core import open_core
from stratamem.core.config import defaults
from stratamem.core.embedding import load_embedder

NS = Namespace(agent_kind="hermes")

SESSIONS = [
    (
        "sess-db",
        "Our production Postgres database runs on host pg-prod-7 and its nightly backup goes to the "
        "bucket s3://acme-backups/pg at 02:00 UTC.",
        "Noted: backups for pg-prod-7 land in s3://acme-backups/pg every night at 02:00 UTC.",
        ToolCall(name="shell.run", input={"cmd": "crontab -l"}, output="0 2 * * * pg_backup.sh"),
    ),
    (
        "sess-pet",
        "My dog is a border collie named Biscuit and she is allergic to chicken.",
        "Got it, Biscuit the border collie must not eat chicken.",
        ToolCall(name="notes.save", input={"title": "Biscuit"}, output="saved"),
    ),
    (
        "sess-trip",
        "I booked a flight to Lisbon on 14 March with TAP, seat 23A, confirmation code QX7RTA.",
        "Your Lisbon trip on 14 March is confirmed: TAP seat 23A, code QX7RTA.",
        ToolCall(name="calendar.add", input={"date": "03-14", "what": "flight"}, output="ok"),
    ),
]

QUESTIONS = [
    ("Where are the nightly copies of the main SQL server stored?", 0),
    ("What food should my pet avoid?", 1),
    ("When am I flying to Portugal and what's my booking reference?", 2),
]


@pytest.fixture(scope="module")
def embedder() -> Any:
    return load_embedder(defaults()["embedding"])


def now() -> int:
    return int(time.time() * 1000)


async def test_paraphrased_question_recalls_the_right_trace_in_top_3(
    tmp_path: Path, embedder: Any
) -> None:
    async with open_core(tmp_path, embedder=embedder) as core:
        assert core.embedder is not None and core.embedder.dimension == 384
        trace_ids = []
        for sid, user, agent, call in SESSIONS:
            t = now()
            await core.turn_start(TurnInput(agent="hermes", session_id=sid, user_text=user, ts=t))
            ack = await core.turn_end(
                TurnResult(
                    agent="hermes", session_id=sid, agent_text=agent, ts=t + 5, tool_calls=(call,)
                )
            )
            trace_ids.append(ack.trace_id)
            await core.close_session(sid)
        for question, expected in QUESTIONS:
            res = await core.turn_start(
                TurnInput(
                    agent="hermes",
                    session_id=f"later-{expected}",
                    user_text=question,
                    ts=now(),
                    deadline_at=now() + 8000,
                )
            )
            top3 = [h.ref_id for h in res.hits[:3]]
            assert trace_ids[expected] in top3, (question, top3)
            assert f'memos_get(id="{trace_ids[expected]}"' in res.injected_context
            assert res.injected_context.startswith("<relevant-memories>")


async def test_timeline_replays_an_episode_in_order(tmp_path: Path, embedder: Any) -> None:
    async with open_core(
        tmp_path, embedder=embedder, algorithm__lightweight_memory__enabled=False
    ) as core:
        t = now()
        r = await core.turn_start(
            TurnInput(
                agent="hermes", session_id="s", user_text="please deploy the api service", ts=t
            )
        )
        calls = (
            ToolCall(name="shell.run", input="docker build .", output="built", started_at=t + 1),
            ToolCall(name="shell.run", input="docker push api", output="pushed", started_at=t + 2),
        )
        await core.turn_end(
            TurnResult(
                agent="hermes", session_id="s", agent_text="Deployed.", ts=t + 3, tool_calls=calls
            )
        )
        await core.turn_start(
            TurnInput(
                agent="hermes", session_id="s", user_text="also tag the release v2", ts=t + 10
            )
        )
        await core.turn_end(
            TurnResult(agent="hermes", session_id="s", agent_text="Tagged v2.", ts=t + 11)
        )
        timeline = await core.timeline(r.query.episode_id or "", NS)
        assert [tr.ts for tr in timeline] == sorted(tr.ts for tr in timeline)
        texts = [tr.agent_text or tr.tool_calls[0].input for tr in timeline]
        assert texts == ["docker build .", "docker push api", "Deployed.", "Tagged v2."]
