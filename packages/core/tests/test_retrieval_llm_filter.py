"""The post-rank LLM relevance filter (memos-core §5.7.5) against the real loopback OpenAI-compatible
stub: the model's selection is kept in its order and capped, malformed answers are retried the
configured number of times, a slow model falls back to the safe cut-off inside the deadline, and
without an LLM the ranking is untouched."""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK, TurnInput, TurnResult
from stratamem.core import open_core
from stratamem.core.retrieval.llm_filter import TASK, output_budget, safe_cutoff

NS = Namespace(agent_kind="hermes")
WORDS = ["amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet"]
QUERY = "staging deploy checklist"


def now() -> int:
    return int(time.time() * 1000)


class FilterScript:
    """Answers the filter task from a queue (else selects everything); records every filter call."""

    def __init__(self) -> None:
        self.answers: list[StubAnswer] = []
        self.calls: list[dict[str, Any]] = []

    def __call__(self, kind: str, body: Any) -> StubAnswer | None:
        if kind != "chat" or not isinstance(body, dict):
            return None
        msgs = body.get("messages") or []
        if not msgs or not str(msgs[0].get("content", "")).startswith(TASK):
            return StubAnswer(content="{}")
        self.calls.append(body)
        if self.answers:
            return self.answers.pop(0)
        n = len(candidates(body))
        return StubAnswer(content=json.dumps({"selected": list(range(1, n + 1))}))


def candidates(body: dict[str, Any]) -> dict[int, str]:
    """Candidate number -> its marker word, read from the prompt the core sent."""
    text = body["messages"][1]["content"]
    out = {}
    for m in re.finditer(r"^(\d+)\. \[TRACE\] (.*)$", text, re.M):
        word = next(w for w in WORDS if w in m.group(2))
        out[int(m.group(1))] = word
    return out


def word_of(snippet: str) -> str:
    return next(w for w in WORDS if w in snippet)


async def _seed(core: Any) -> None:
    t = now() - 60_000
    for i, w in enumerate(WORDS):
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id=f"s-{w}",
                user_text=f"Staging deploy checklist item {w}: verify the {w} service before deploy",
                agent_text=f"Checked the {w} service on staging; the deploy checklist item passed.",
                ts=t + i,
                namespace=NS,
            )
        )


def _query(retries: int | None = None, deadline_ms: int | None = None) -> RetrievalQuery:
    return RetrievalQuery(
        agent="hermes",
        query=QUERY,
        namespace=NS,
        top_k=TopK(tier2=7),
        llm_filter_malformed_retries=retries,
        deadline_at=now() + deadline_ms if deadline_ms is not None else None,
    )


def _core(tmp_path: Path, server: StubOpenAIServer | None, **settings: Any) -> Any:
    llm: dict[str, Any] = {"llm__provider": ""}
    if server is not None:
        llm = {
            "llm__provider": "openai_compatible",
            "llm__endpoint": server.url,
            "llm__model": "stub",
            "llm__max_retries": 0,
            "llm__fallback_to_host": False,
        }
    return open_core(tmp_path, embedding__provider="none", **llm, **settings)


@contextlib.asynccontextmanager
async def _filtered(
    tmp_path: Path, *, seed: bool = True, **settings: Any
) -> AsyncIterator[tuple[Any, FilterScript]]:
    """A real LocalCore whose LLM is the loopback OpenAI-compatible stub answering from a
    ``FilterScript`` (``settings``: more config overrides), seeded with the ``WORDS`` memories."""
    script = FilterScript()
    with StubOpenAIServer() as server:
        server.handler = script
        async with _core(tmp_path, server, **settings) as core:
            if seed:
                await _seed(core)
            yield core, script


async def test_the_models_selection_is_kept_in_its_order_up_to_the_asked_top_k(
    tmp_path: Path,
) -> None:
    # a search that asks for 7 hits keeps all 5 the model selected, not llm_filter_max_keep (4)
    async with _filtered(tmp_path) as (core, script):
        script.answers.append(
            StubAnswer(content=json.dumps({"selected": [6, 2, 5, 1, 3], "sufficient": True}))
        )
        got = await core.search(_query())
    assert len(script.calls) == 1
    call = script.calls[0]
    shown = candidates(call)
    assert len(shown) == 7
    assert [word_of(h.snippet) for h in got.hits] == [shown[i] for i in (6, 2, 5, 1, 3)]
    assert call["max_tokens"] == output_budget(7) == 160
    assert QUERY in call["messages"][1]["content"]


async def test_without_an_asked_top_k_the_selection_is_capped_at_max_keep(tmp_path: Path) -> None:
    async with _filtered(tmp_path) as (core, script):
        script.answers.append(StubAnswer(content=json.dumps({"selected": [5, 2, 4, 1, 3]})))
        got = await core.search(RetrievalQuery(agent="hermes", query=QUERY, namespace=NS))
    shown = candidates(script.calls[0])
    assert len(shown) == 5  # tier2_top_k
    assert [word_of(h.snippet) for h in got.hits] == [shown[i] for i in (5, 2, 4, 1)]


async def test_an_empty_selection_keeps_nothing(tmp_path: Path) -> None:
    async with _filtered(tmp_path) as (core, script):
        script.answers.append(StubAnswer(content=json.dumps({"selected": [], "ranked": []})))
        got = await core.search(_query())
    assert got.hits == () and got.injected_context == ""


async def test_malformed_json_with_zero_retries_makes_one_call_then_keeps_the_safe_cutoff(
    tmp_path: Path,
) -> None:
    async with _core(tmp_path, None) as plain:
        await _seed(plain)
        unfiltered = await plain.search(_query())
    async with _filtered(tmp_path, seed=False) as (core, script):  # the same home, the same rows
        script.answers.append(StubAnswer(content="sure, the first ones look relevant"))
        got = await core.search(_query(retries=0))
    assert len(script.calls) == 1
    top = unfiltered.hits[0].score
    eligible = {h.ref_id for h in unfiltered.hits if h.score >= 0.7 * top}
    # the safe cut-off keeps at most the asked top k (7), not llm_filter_max_keep
    assert len(got.hits) == min(7, len(eligible)) and len(unfiltered.hits) == 7
    assert {h.ref_id for h in got.hits} <= eligible
    assert got.hits[0].score == pytest.approx(top, abs=1e-3)


async def test_malformed_then_valid_with_one_retry_uses_the_second_answer(
    tmp_path: Path,
) -> None:
    async with _filtered(tmp_path) as (core, script):
        script.answers += [
            StubAnswer(content='{"selected": "three"}'),
            StubAnswer(content=json.dumps({"ranked": [7, 4]})),
        ]
        got = await core.search(_query(retries=1))
    assert len(script.calls) == 2
    shown = candidates(script.calls[0])
    assert [word_of(h.snippet) for h in got.hits] == [shown[7], shown[4]]
    # the retry carries the malformed answer and a correction request
    assert len(script.calls[1]["messages"]) == 4


async def test_the_default_is_one_retry_when_the_query_does_not_say(tmp_path: Path) -> None:
    async with _filtered(tmp_path) as (core, script):
        script.answers += [StubAnswer(content="nope"), StubAnswer(content="still nope")]
        got = await core.search(_query())
    assert len(script.calls) == 2
    assert 1 <= len(got.hits) <= 7


async def test_a_slow_model_falls_back_to_the_safe_cutoff_within_the_deadline(
    tmp_path: Path,
) -> None:
    async with _filtered(tmp_path) as (core, script):
        await core.search(_query())  # warm up (journal applied, tables open)
        script.calls.clear()
        script.answers.append(StubAnswer(content=json.dumps({"selected": [1]}), delay_s=30))
        t0 = time.monotonic()
        got = await core.search(_query(deadline_ms=1500))
        took = time.monotonic() - t0
    assert len(script.calls) == 1
    # generous: the point is that recall did not wait for the model's 30 s answer
    assert took < 12
    assert 1 <= len(got.hits) <= 7 and got.cut_off


async def test_a_model_stopped_by_the_clients_own_timeout_is_reported_as_cut_off(
    tmp_path: Path,
) -> None:
    """The per-call cap (2 s) fires inside the HTTP client long before the 30 s deadline: that is
    a time-out like the deadline's own, so the result is marked cut off (it used to pass as a
    plain provider failure, which made the deadline test flaky when both timers ended together)."""
    async with _filtered(tmp_path) as (core, script):
        await core.search(_query())
        script.calls.clear()
        script.answers.append(StubAnswer(content=json.dumps({"selected": [1]}), delay_s=6))
        got = await core.search(_query(deadline_ms=30_000))
    assert len(script.calls) == 1
    assert got.cut_off
    assert 1 <= len(got.hits) <= 7  # the safe cut-off, not the model's late answer


async def test_the_call_cap_is_a_setting_so_a_slower_model_is_waited_for(
    tmp_path: Path,
) -> None:
    """``llm_filter_timeout_ms`` (default 2000) lets a local CPU model that needs seconds decide;
    with the cap fixed at 2 s its selection was always replaced by the safe cut-off."""
    async with _filtered(tmp_path, retrieval__llm_filter_timeout_ms=30_000) as (core, script):
        script.answers.append(StubAnswer(content=json.dumps({"selected": [3]}), delay_s=3))
        got = await core.search(_query(deadline_ms=120_000))
    shown = candidates(script.calls[0])
    assert not got.cut_off
    assert [word_of(h.snippet) for h in got.hits] == [shown[3]]


async def test_without_an_llm_the_ranking_passes_through_unchanged(tmp_path: Path) -> None:
    async with _core(tmp_path, None) as core:
        await _seed(core)
        got = await core.search(_query())
        assert core.llm is None
    assert len(got.hits) == 7  # nothing capped at max_keep, nothing cut off
    assert [h.score for h in got.hits] == sorted((h.score for h in got.hits), reverse=True)
    assert not got.cut_off


async def test_turn_start_passes_the_callers_retry_budget_to_the_filter(tmp_path: Path) -> None:
    async with _filtered(tmp_path) as (core, script):
        script.answers += [StubAnswer(content="not json"), StubAnswer(content="not json")]
        await core.turn_start(
            TurnInput(
                agent="hermes",
                session_id="s-new",
                user_text="What is on the staging deploy checklist?",
                ts=now(),
                namespace=NS,
                llm_filter_malformed_retries=0,
            )
        )
    assert len(script.calls) == 1


@pytest.mark.parametrize(
    ("scores", "kept"),
    [
        ([1.0, 0.9, 0.71, 0.69], 3),
        ([1.0, 0.95, 0.9, 0.85, 0.8, 0.75], 4),
        ([1.0, 0.2], 1),
        ([-0.1, -0.2], 1),
    ],
)
def test_safe_cutoff_keeps_close_scores_at_most_max_keep_and_at_least_the_best(
    scores: list[float], kept: int
) -> None:
    from stratamem.core.retrieval.candidates import Candidate
    from stratamem.core.retrieval.rank import Ranked

    items = [
        Ranked(Candidate("trace", f"t{i}", {}), 0.0, 0.0, 0.0, 0.0, score=s)
        for i, s in enumerate(scores)
    ]
    got = safe_cutoff(items, 4)
    assert [it.cand.ref_id for it in got] == [f"t{i}" for i in range(kept)]
