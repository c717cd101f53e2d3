"""LLM query rewriting before recall (retrieval/llm_rewrite.py) against the real loopback
OpenAI-compatible stub: the model's search queries widen the lexical channels, so a memory that
shares no word with the question is recalled; off by default; a malformed or slow answer passes the
query through unchanged within the recall's deadline."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnResult
from stratamem.core import open_core
from stratamem.core.retrieval.llm_rewrite import TASK, queries_of, widen
from stratamem.core.retrieval.query import compile_text

NS = Namespace(agent_kind="hermes", profile_id="rewrite")
QUESTION = "Which pet was brought home recently?"


class RewriteScript:
    """Answers the rewrite task from a queue; every other chat call gets ``{}``."""

    def __init__(self, *answers: StubAnswer) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, kind: str, body: Any) -> StubAnswer | None:
        if kind != "chat" or not isinstance(body, dict):
            return None
        msgs = body.get("messages") or []
        if not msgs or not str(msgs[0].get("content", "")).startswith(TASK):
            return StubAnswer(content="{}")
        self.calls.append(body)
        return self.answers.pop(0) if self.answers else StubAnswer(content="{}")


def _core(tmp_path: Path, server: StubOpenAIServer, **extra: Any) -> Any:
    return open_core(
        tmp_path,
        embedding__provider="none",
        llm__provider="openai_compatible",
        llm__endpoint=server.url,
        llm__model="stub",
        llm__max_retries=0,
        llm__fallback_to_host=False,
        retrieval__llm_filter_enabled=False,
        **extra,
    )


async def _seed(core: Any) -> None:
    now = int(time.time() * 1000)
    for i, (u, a) in enumerate(
        [
            ("I adopted a puppy from the shelter, her name is Coco!", "John: So cute!"),
            ("The weather in town was rainy all week.", "John: Same here."),
        ]
    ):
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s1",
                user_text=u,
                agent_text=a,
                ts=now + i,
                namespace=NS,
            )
        )


def _ask(deadline_ms: int | None = None) -> RetrievalQuery:
    return RetrievalQuery(
        agent="hermes",
        query=QUESTION,
        namespace=NS,
        deadline_at=int(time.time() * 1000) + deadline_ms if deadline_ms else None,
    )


async def test_the_models_queries_recall_a_memory_that_shares_no_word_with_the_question(
    tmp_path: Path,
) -> None:
    script = RewriteScript(
        StubAnswer(content=json.dumps({"queries": ["Maria adopted puppy dog", "new pet name"]}))
    )
    with StubOpenAIServer() as server:
        server.handler = script
        async with _core(tmp_path, server, retrieval__llm_query_rewrite=True) as core:
            await _seed(core)
            got = await core.search(_ask())
    assert len(script.calls) == 1
    assert QUESTION in script.calls[0]["messages"][1]["content"]
    assert got.hits and "puppy" in got.hits[0].snippet


async def test_rewriting_is_off_by_default_and_the_query_is_unchanged(tmp_path: Path) -> None:
    script = RewriteScript(StubAnswer(content=json.dumps({"queries": ["Maria adopted puppy"]})))
    with StubOpenAIServer() as server:
        server.handler = script
        async with _core(tmp_path, server) as core:
            await _seed(core)
            got = await core.search(_ask())
    assert script.calls == []
    assert not any("puppy" in h.snippet for h in got.hits)


async def test_a_malformed_or_slow_answer_passes_the_query_through(tmp_path: Path) -> None:
    script = RewriteScript(
        StubAnswer(content="not json at all"),
        StubAnswer(content=json.dumps({"queries": ["Maria adopted puppy"]}), delay_s=5.0),
    )
    with StubOpenAIServer() as server:
        server.handler = script
        async with _core(tmp_path, server, retrieval__llm_query_rewrite=True) as core:
            await _seed(core)
            malformed = await core.search(_ask())
            t0 = time.monotonic()
            slow = await core.search(_ask(deadline_ms=2000))
            took = time.monotonic() - t0
    assert len(script.calls) == 2
    for got in (malformed, slow):
        assert not any("puppy" in h.snippet for h in got.hits)
    assert took < 4.5  # the rewrite gets at most half of the 2 s budget, never the model's 5 s


async def test_a_slower_model_is_waited_for_when_the_call_cap_allows_it(tmp_path: Path) -> None:
    """A local model on a CPU answers in seconds: ``llm_query_rewrite_timeout_ms`` gives it that
    time (the cap was a fixed 1.5 s, so every such answer was thrown away)."""
    script = RewriteScript(
        StubAnswer(content=json.dumps({"queries": ["Maria adopted puppy dog"]}), delay_s=2.5)
    )
    with StubOpenAIServer() as server:
        server.handler = script
        async with _core(
            tmp_path,
            server,
            retrieval__llm_query_rewrite=True,
            retrieval__llm_query_rewrite_timeout_ms=30_000,
        ) as core:
            await _seed(core)
            got = await core.search(_ask(deadline_ms=120_000))
    assert len(script.calls) == 1
    assert got.hits and "puppy" in got.hits[0].snippet


def test_queries_of_keeps_distinct_new_strings_and_rejects_malformed_answers() -> None:
    assert queries_of({"queries": ["a b", "A B", "", QUESTION, "c"]}, QUESTION) == ["a b", "c"]
    assert queries_of({"queries": "one string"}, QUESTION) is None
    assert queries_of({"queries": [1, 2]}, QUESTION) is None
    assert queries_of({}, QUESTION) is None


def test_widen_appends_new_terms_after_the_originals_and_keeps_the_embedded_text() -> None:
    cq = compile_text(QUESTION)
    wide = widen(cq, ["Maria adopted a puppy", "pet dog"])
    assert wide.text == cq.text
    assert wide.terms[: len(cq.terms)] == cq.terms
    assert {"adopted", "puppy", "dog"} <= set(wide.terms)
    assert wide.fts_text.split()[: len(cq.terms)] == list(cq.terms)
    assert widen(cq, []) is cq
