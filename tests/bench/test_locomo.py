"""The LoCoMo harness parses the release format into the metric's memories and questions."""

from __future__ import annotations

from pathlib import Path

from bench.locomo import (
    halves,
    llm_overrides_from_env,
    load,
    parse_conversation,
    pick,
    render,
    run_locomo,
    score,
)

CORE_TESTS = str(Path(__file__).resolve().parents[2] / "packages" / "core" / "tests")
RAW = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a grey cat"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Her name is Mia."},
        ],
        "session_2_date_time": "10:00 am on 2 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1", "text": "I ran a marathon."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Wow."},
        ],
    },
    "qa": [
        {
            "question": "What is the cat called?",
            "answer": "Mia",
            "evidence": ["D1:3"],
            "category": 4,
        },
        {"question": "Pets and races?", "answer": "x", "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "Ghost?", "answer": "x", "evidence": ["D9:9"], "category": 2},
        {
            "question": "What did Bob paint?",
            "adversarial_answer": "x",
            "evidence": [],
            "category": 5,
        },
    ],
}


def test_one_memory_per_pair_of_turns_within_a_session_with_speaker_and_date() -> None:
    c = parse_conversation(RAW)
    assert [m.dia_ids for m in c.memories] == [("D1:1", "D1:2"), ("D1:3",), ("D2:1", "D2:2")]
    first = c.memories[0]
    assert first.user_text == "Ann: I adopted a cat."
    assert first.agent_text == "Bob: Nice! [shares a photo: a grey cat]"
    assert first.ts < c.memories[2].ts < c.ask_ts
    assert c.memories[1].agent_text == ""


def test_questions_map_evidence_to_memories_and_skip_missing_evidence() -> None:
    c = parse_conversation(RAW)
    by_text = {q.text: q for q in c.questions}
    assert by_text["What is the cat called?"].gold == ("conv-x#1",)
    assert by_text["Pets and races?"].gold == ("conv-x#0", "conv-x#2")  # "D1:1; D2:1" split
    assert "Ghost?" not in by_text  # evidence names no existing turn
    assert (
        by_text["What did Bob paint?"].gold == () and by_text["What did Bob paint?"].category == 5
    )


def test_score_is_all_evidence_for_recall_and_any_for_hit() -> None:
    qs = [q for q in parse_conversation(RAW).questions]
    ranked = {q.id: {"ranked": ["conv-x#0", "conv-x#1"], "ms": 1.0} for q in qs}
    s = score(qs, {"x": ranked})["x"]
    assert s["all"]["R@10"] == 0.5  # the two-evidence question misses conv-x#2
    assert s["all"]["hit@10"] == 1.0
    assert s["all"]["MRR@10"] == 0.75  # 1/2 and 1/1
    assert s["abstention_cat5"] == 0.0


def test_the_rankings_digest_changes_with_any_questions_order() -> None:
    qs = [q for q in parse_conversation(RAW).questions]
    ranked = {q.id: {"ranked": ["conv-x#0", "conv-x#1"], "ms": 1.0} for q in qs}
    swapped = {**ranked, qs[0].id: {"ranked": ["conv-x#1", "conv-x#0"], "ms": 2.0}}
    got = score(qs, {"a": ranked, "b": dict(ranked), "c": swapped})
    assert got["a"]["digest"] == got["b"]["digest"] != got["c"]["digest"]
    assert len(got["a"]["digest"]) == 12


def test_pick_keeps_every_category_at_smoke_size(tmp_path: Path) -> None:
    import json

    p = tmp_path / "d.json"
    p.write_text(json.dumps([RAW, {**RAW, "sample_id": "conv-y"}]))
    convs = pick(load(p), 1, 1)
    assert [c.id for c in convs] == ["conv-x"]
    assert sorted(q.category for q in convs[0].questions) == [1, 4, 5]


async def test_absent_data_is_reported_not_failed(tmp_path: Path) -> None:
    res = await run_locomo(None, tmp_path / "missing.json")
    assert "not found" in res["skipped"]
    assert "Skipped" in render(res)


async def test_the_harness_runs_end_to_end_with_the_llm_rows_over_a_scripted_server(
    tmp_path: Path,
) -> None:
    import json
    import sys

    sys.path.insert(0, CORE_TESTS)
    from stub_server import StubOpenAIServer

    from stratamem.core.embedding import load_embedder
    from stratamem.core.retrieval.llm_filter import TASK as FILTER_TASK
    from stratamem.core.retrieval.llm_rewrite import TASK as REWRITE_TASK

    p = tmp_path / "d.json"
    p.write_text(json.dumps([RAW]))
    with StubOpenAIServer(default_content=json.dumps({"selected": [1]})) as server:
        res = await run_locomo(
            load_embedder({}),
            p,
            llm_overrides={
                **(llm_overrides_from_env(server.url, "stub") or {}),
                "llm__max_retries": 0,
            },
        )
        chats = [r for r in server.requests if "chat" in r.path]
    systems = res["systems"]
    assert {"search", "turn_start", "bm25", "vector", "rrf", "search+llm"} <= set(systems)
    assert systems["search"]["all"]["n"] == 2 and res["adversarial"] == 1
    assert chats  # the relevance filter really asked the (scripted) model
    systems_sent = [str((r.json or {}).get("messages", [{}])[0].get("content", "")) for r in chats]
    assert any(m.startswith(REWRITE_TASK) for m in systems_sent)  # and query rewriting did too
    assert any(m.startswith(FILTER_TASK) for m in systems_sent)
    assert "stub" in " ".join(res["notes"])
    assert "LLM query rewriting and the LLM relevance filter on" in " ".join(res["notes"])
    assert "search+llm" in render(res)
    # the filter kept at most the one memory the scripted model selected, per question
    assert systems["search+llm"]["all"]["R@10"] <= systems["search"]["all"]["R@10"]
    assert systems["search+llm"]["hits_mean"] <= 1.0
    calls = res["llm_calls"]  # every call timed by task at the provider
    assert calls["retrieval.filter"]["outcomes"]["ok"] >= 1
    assert calls["retrieval.rewrite"]["outcomes"]["ok"] >= 1
    assert "| retrieval.filter |" in render(res)


def test_halves_score_the_tuning_and_the_confirming_conversations_apart() -> None:
    convs = [parse_conversation(RAW | {"sample_id": f"conv-{i}"}) for i in range(5)]
    questions = [q for c in convs for q in c.questions]
    # search finds everything in the first three conversations and nothing in the last two
    search = {q.id: {"ranked": list(q.gold) if q.conv < "conv-3" else []} for q in questions}
    got = halves(convs, questions, {"search": search, "bm25": search})
    tune, confirm = got["tune (conv-0, conv-1, conv-2)"], got["confirm (conv-3, conv-4)"]
    assert set(tune) == {"search"}  # baselines are not split
    assert tune["search"]["all"]["R@10"] == 1.0 and tune["search"]["all"]["n"] == 6
    assert confirm["search"]["all"]["hit@10"] == 0.0 and confirm["search"]["all"]["n"] == 4
    assert halves(convs[:3], questions, {"search": search}) == {}
    res = {"conversations": [c.id for c in convs], "memories": 0, "questions": 10}
    assert "| confirm (conv-3, conv-4) | search | 4 |" in render(
        res | {"adversarial": 5, "ingest_s": 0, "systems": {}, "halves": got}
    )


def test_every_nth_question_is_a_deterministic_subset(tmp_path: Path) -> None:
    import json

    p = tmp_path / "d.json"
    p.write_text(json.dumps([RAW]))
    full = [q.id for q in load(p)[0].questions]
    assert [q.id for q in pick(load(p), 0, 0, every=2)[0].questions] == full[::2]
