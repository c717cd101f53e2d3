"""The recall layer, sentence by sentence of the seed: de-duplication, serialisation, search, section."""

from __future__ import annotations

import itertools
import json
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from together import assert_all_ok, python_cmd, run_together

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.recall import (
    RecallRecord,
    RecallStore,
    RecallVectorHit,
    append_recalled_context,
    build_recalled_context_section,
    clamp_recall_search_limit,
    content_hash,
    jaccard,
    normalize_recall_content,
    recall_tokens,
)
from stratamem.core.workspace.recall.store import DUPLICATE_WINDOW


def load_real_embedder() -> Any:
    """The real local embedder (all-MiniLM-L6-v2 on onnxruntime), as the service loads it."""
    from stratamem.core.workspace.embedder import load_default_embedder

    return load_default_embedder()


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


@pytest.fixture
def store(tmp_path: Path) -> RecallStore:
    return RecallStore(tmp_path / "recall", "proj-a", clock=Clock())


def distinct(i: int) -> str:
    return f"note {i} about topic{i} with widget{i * 7} and gadget{i * 13}"


# -- normalisation and de-duplication ----------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("  Use   SQLite\tfor recall!  ", "use sqlite for recall"),
        ("Prefer tabs...", "prefer tabs"),
        ("Done. ?! ", "done"),
        ("Keep (parens) inside", "keep (parens) inside"),
        ("Ünïcode  WÖRDS。", "ünïcode wörds"),
    ],
)
def test_normalisation_trims_lowercases_collapses_whitespace_and_strips_trailing_punctuation(
    raw: str, normalized: str
) -> None:
    assert normalize_recall_content(raw) == normalized


def test_exact_normalised_duplicate_is_rejected_and_returns_the_existing_record(
    store: RecallStore,
) -> None:
    first = store.append("decision", "Use SQLite for recall.")
    assert first.accepted
    again = store.append("decision", "  use   sqlite FOR recall!!! ")
    assert not again.accepted and again.duplicate_reason == "exact"
    assert again.record.id == first.record.id
    assert store.count("decision") == 1


def test_jaccard_at_least_point_nine_is_a_near_duplicate(store: RecallStore) -> None:
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    assert store.append("solution", base).accepted
    near = base + " lambda"  # 10/11 ≈ 0.909
    assert jaccard(recall_tokens(base), recall_tokens(near)) >= 0.9
    result = store.append("solution", near)
    assert not result.accepted and result.duplicate_reason == "similar"
    assert result.similarity is not None and result.similarity >= 0.9
    farther = base + " lambda mu"  # 10/12 ≈ 0.83
    assert store.append("solution", farther).accepted


def test_duplicates_are_judged_per_kind(store: RecallStore) -> None:
    assert store.append("decision", "run ruff before commit").accepted
    assert store.append("preference", "run ruff before commit").accepted
    assert store.append("solution", "Run ruff before commit.").accepted


def test_duplicates_are_judged_per_project(tmp_path: Path) -> None:
    a = RecallStore(tmp_path / "r", "proj-a")
    b = RecallStore(tmp_path / "r", "proj-b")  # same database, other project
    assert a.append("decision", "ship on fridays").accepted
    assert b.append("decision", "ship on fridays").accepted
    assert a.count() == 1 and b.count() == 1
    assert [h.record.project_id for h in b.search("fridays").hits] == ["proj-b"]


def test_near_duplicate_window_is_the_200_most_recent_same_kind_records(store: RecallStore) -> None:
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    assert store.append("decision", base).accepted
    for i in range(DUPLICATE_WINDOW):
        assert store.append("decision", distinct(i)).accepted
    # the near twin is now outside the window: it is accepted (the bounded window is intentional)
    assert store.append("decision", base + " lambda").accepted


def test_exact_twin_outside_the_window_hits_the_unique_backstop_without_aborting(
    store: RecallStore,
) -> None:
    first = store.append("decision", "the canonical decision")
    for i in range(DUPLICATE_WINDOW):
        store.append("decision", distinct(i))
    again = store.append("decision", "The canonical decision.")
    assert not again.accepted and again.duplicate_reason == "exact"
    assert again.record.id == first.record.id
    assert store.append(
        "decision", "a brand new decision afterwards"
    ).accepted  # store still usable


def test_a_bypassing_importer_is_stopped_by_the_constraint_alone(store: RecallStore) -> None:
    assert store.append("solution", "restart the worker").accepted
    twin = RecallRecord(
        id="rc_imported",
        project_id="proj-a",
        kind="solution",
        content="Restart the worker!",
        content_hash="",
        created_at=1,
        updated_at=1,
    )
    assert store.import_record(twin) is False
    assert store.count("solution") == 1


def test_records_carry_tags_provenance_timestamps_and_graph_ids(store: RecallStore) -> None:
    rec = store.append(
        "preference",
        "Prefer small modules",
        tags=["Style", "style", " python "],
        source={"task_id": "T-1", "agent_id": "codex", "session_id": "s9", "origin": "tool"},
        kg_node_ids=["n1", "n2"],
    ).record
    assert rec.tags == ("style", "python")
    assert (rec.task_id, rec.agent_id, rec.session_id, rec.origin) == ("T-1", "codex", "s9", "tool")
    assert rec.kg_node_ids == ("n1", "n2")
    assert rec.created_at > 0 and rec.updated_at == rec.created_at
    assert rec.content_hash == content_hash("prefer small modules")
    stored = store.search("small modules").hits[0].record
    assert stored == rec


@pytest.mark.parametrize(
    ("kind", "content", "kwargs"),
    [
        ("opinion", "x y", {}),
        ("decision", "", {}),
        ("decision", "  ...!  ", {}),
        ("decision", 42, {}),
        ("decision", "ok words", {"tags": "not-a-list"}),
        ("decision", "ok words", {"tags": [1]}),
        ("decision", "ok words", {"source": {"who": "me"}}),
        ("decision", "ok words", {"source": {"task_id": 5}}),
        ("decision", "x" * 20000, {}),
        ("decision", "bad \udc80 surrogate", {}),
    ],
)
def test_bad_appends_are_invalid_argument_and_store_nothing(
    store: RecallStore, kind: str, content: Any, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(StratamemError) as err:
        store.append(kind, content, **kwargs)
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    assert store.count() == 0


def test_same_kind_appends_from_threads_are_serialised(tmp_path: Path) -> None:
    store = RecallStore(tmp_path / "r", "p")
    variants = ["Use uv.", "use uv", "USE UV!", "  use   uv ", "Use uv..."]
    results: list[bool] = []
    barrier = threading.Barrier(len(variants))

    def worker(text: str) -> None:
        barrier.wait()
        results.append(store.append("decision", text).accepted)

    threads = [threading.Thread(target=worker, args=(v,)) for v in variants]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1 and store.count("decision") == 1


def test_other_kinds_are_not_blocked_by_a_held_kind_lock(tmp_path: Path) -> None:
    store = RecallStore(tmp_path / "r", "p")
    done = threading.Event()
    with store._kind_lock("decision"):
        t = threading.Thread(
            target=lambda: (store.append("solution", "independent work"), done.set())
        )
        t.start()
        assert done.wait(10), "a solution append waited for the decision lock"
        t.join()


# -- search ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_limit", "expected"),
    [
        (None, 10),
        (0, 10),
        (-3, 10),
        (1, 1),
        (50, 50),
        (51, 50),
        (10_000, 50),
        ("7", 7),
        ("x", 10),
        (True, 10),
    ],
)
def test_one_clamp_default_ten_maximum_fifty(given_limit: Any, expected: int) -> None:
    assert clamp_recall_search_limit(given_limit) == expected


def test_keyword_search_is_deterministic_and_filters_by_kind_and_tags(store: RecallStore) -> None:
    store.append("decision", "use postgres for analytics", tags=["db"])
    store.append("decision", "use sqlite for recall", tags=["db", "local"])
    store.append("solution", "sqlite busy timeout fixes locked errors", tags=["db"])
    first = store.search("sqlite")
    assert first.mode == "keyword" and first.capabilities == {"keyword": True, "vector": False}
    assert [h.record.content for h in first.hits] == [
        h.record.content for h in store.search("sqlite").hits
    ]
    assert {h.record.kind for h in store.search("sqlite", kinds=["solution"]).hits} == {"solution"}
    assert [h.record.content for h in store.search("use", tags=["local"]).hits] == [
        "use sqlite for recall"
    ]
    assert store.search("nothing matches this").hits == []


def test_keyword_and_list_paths_share_the_clamp(store: RecallStore) -> None:
    for i in range(60):
        store.append("decision", distinct(i))
    assert len(store.search("note").hits) == 10
    assert len(store.search("note", limit=500).hits) == 50
    listing = store.search("", limit=500).hits
    assert len(listing) == 50
    assert listing[0].record.content == distinct(59)  # list path: most recent first


def test_search_rejects_bad_filters(store: RecallStore) -> None:
    with pytest.raises(StratamemError):
        store.search("x", kinds=["opinion"])
    with pytest.raises(StratamemError):
        store.search(5)  # type: ignore[arg-type]


# -- per-call vector provider semantics ----------------------------------------------------------


class ListProvider:
    """A caller-supplied ranking provider returning exactly what the test scripts."""

    def __init__(self, hits: Sequence[Any] | Exception | None) -> None:
        self.hits = hits
        self.seen: list[list[str]] = []

    def search(self, query: str, candidates: Sequence[RecallRecord], limit: int) -> Any:
        self.seen.append([c.id for c in candidates])
        if isinstance(self.hits, Exception):
            raise self.hits
        return self.hits


@pytest.fixture
def seeded(store: RecallStore) -> dict[str, str]:
    ids = {}
    for kind, text in [
        ("decision", "adopt lancedb for vectors"),
        ("decision", "keep sqlite for transactions"),
        ("solution", "lancedb duplicate rows fixed by primary key"),
    ]:
        ids[text] = store.append(kind, text, tags=["db"]).record.id
    return ids


def test_provider_ranks_only_the_scoped_filtered_candidates(
    store: RecallStore, seeded: dict[str, str]
) -> None:
    sol = seeded["lancedb duplicate rows fixed by primary key"]
    provider = ListProvider([RecallVectorHit(sol, 0.9)])
    result = store.search("lancedb", kinds=["decision"], vector_provider=provider)
    assert sorted(provider.seen[0]) == sorted(
        [seeded["adopt lancedb for vectors"], seeded["keep sqlite for transactions"]]
    )
    # the provider named a record outside the candidate set: discarded → keyword mode
    assert result.mode == "keyword" and result.capabilities["vector"] is True
    assert [h.record.id for h in result.hits] == [seeded["adopt lancedb for vectors"]]


def test_vector_mode_keeps_highest_duplicate_score_and_clamps_after_ranking(
    store: RecallStore, seeded: dict[str, str]
) -> None:
    a, b = seeded["adopt lancedb for vectors"], seeded["keep sqlite for transactions"]
    provider = ListProvider(
        [(a, 0.2), {"id": b, "score": 0.5}, RecallVectorHit(a, 0.8), ("rc_unknown", 9.0)]
    )
    result = store.search("anything", vector_provider=provider, limit=1)
    assert result.mode == "vector"
    assert [(h.record.id, h.score) for h in result.hits] == [(a, 0.8)]
    full = store.search("anything", vector_provider=ListProvider([(a, 0.2), (b, 0.5), (a, 0.8)]))
    assert [h.record.id for h in full.hits] == [a, b]


@pytest.mark.parametrize(
    "behaviour",
    [RuntimeError("provider down"), [], None, [("rc_unknown", 1.0)], [("bad",)], ["garbage"]],
)
def test_failing_empty_or_unknown_only_providers_degrade_to_keyword(
    store: RecallStore, seeded: dict[str, str], behaviour: Any
) -> None:
    result = store.search("lancedb", vector_provider=ListProvider(behaviour))
    assert result.mode == "keyword"
    assert result.capabilities == {"keyword": True, "vector": True}
    assert {h.record.id for h in result.hits} == {
        seeded["adopt lancedb for vectors"],
        seeded["lancedb duplicate rows fixed by primary key"],
    }


def test_provider_limit_is_advisory_and_the_store_clamps(store: RecallStore) -> None:
    ids = [store.append("decision", distinct(i)).record.id for i in range(60)]
    provider = ListProvider([(rid, float(i)) for i, rid in enumerate(ids)])  # returns all 60
    result = store.search("q", vector_provider=provider, limit=99)
    assert result.mode == "vector" and len(result.hits) == 50
    assert result.hits[0].record.id == ids[-1]


def test_shipped_vector_provider_ranks_paraphrases_with_the_real_embedder(
    store: RecallStore,
) -> None:
    from stratamem.core.workspace.recall.vector import EmbeddingRecallVectorProvider

    provider = EmbeddingRecallVectorProvider(load_real_embedder())
    store.append("solution", "The cat is sleeping on the warm windowsill")
    store.append("solution", "Quarterly revenue grew by twelve percent")
    result = store.search("a kitten naps in the sun by the window", vector_provider=provider)
    assert result.mode == "vector"
    assert result.hits[0].record.content.startswith("The cat")
    assert len(result.hits) == 2


# -- the ### Recalled Context section ----------------------------------------------------------


def test_section_has_separator_heading_lines_and_trailing_newline() -> None:
    section = build_recalled_context_section(["use uv", "pin lancedb"])
    assert section == "\n\n### Recalled Context\n- use uv\n- pin lancedb\n"


def test_section_drops_what_does_not_fit_and_marks_a_cut_line() -> None:
    items = [f"item {i} " + "x" * 90 for i in range(20)]
    section = build_recalled_context_section(items)
    assert len(section.encode("utf-8")) <= 800
    assert section.endswith("…\n")


def test_section_is_empty_when_nothing_fits_and_the_prompt_is_kept() -> None:
    assert build_recalled_context_section([]) == ""
    assert build_recalled_context_section(["x"], max_bytes=10) == ""
    assert append_recalled_context("PROMPT", []) == "PROMPT"


def test_instructions_before_the_section_are_never_truncated() -> None:
    prompt = "Instructions " * 500  # far beyond 800 bytes on its own
    out = append_recalled_context(prompt, ["remember this"])
    assert out.startswith(prompt)
    assert len(out.encode()) - len(prompt.encode()) <= 800


@settings(max_examples=200, deadline=None)
@given(
    prompt=st.text(max_size=2000),
    items=st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=400), max_size=30),
)
def test_property_section_never_exceeds_800_bytes_and_never_touches_the_prompt(
    prompt: str, items: list[str]
) -> None:
    out = append_recalled_context(prompt, items)
    assert out.startswith(prompt)
    section = out[len(prompt) :]
    assert len(section.encode("utf-8")) <= 800
    if section:
        assert section.startswith("\n\n### Recalled Context\n") and section.endswith("\n")


# -- property: no exact-normalised duplicates, every accepted append findable -----------------

WORDS = [
    "cache",
    "retry",
    "lancedb",
    "sqlite",
    "deploy",
    "lint",
    "types",
    "uv",
    "tox",
    "grpc",
    "ünïcode",
    "日本",
]
_phrase = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


@st.composite
def variant(draw: st.DrawFn) -> tuple[str, str]:
    text = draw(_phrase)
    if draw(st.booleans()):
        text = text.upper() if draw(st.booleans()) else text.title()
    if draw(st.booleans()):
        text = text.replace(" ", draw(st.sampled_from(["  ", "\t", " \n "])))
    text = (
        draw(st.sampled_from(["", " ", "  "]))
        + text
        + draw(st.sampled_from(["", ".", "!!", "?.", " ...", "。"]))
    )
    return draw(st.sampled_from(["decision", "preference", "solution"])), text


def assert_store_invariants(store: RecallStore, accepted: list[str]) -> None:
    records = store.candidates()
    by_kind: dict[str, list[RecallRecord]] = {}
    for r in records:
        by_kind.setdefault(r.kind, []).append(r)
    for kind, recs in by_kind.items():
        norms = [normalize_recall_content(r.content) for r in recs]
        assert len(norms) == len(set(norms)), f"exact-normalised duplicate among {kind}"
        for x, y in itertools.combinations(recs, 2):
            assert jaccard(recall_tokens(x.content), recall_tokens(y.content)) < 0.9
    ids = {r.id for r in records}
    for rid in accepted:
        assert rid in ids
        rec = next(r for r in records if r.id == rid)
        hits = store.search(rec.content, kinds=[rec.kind], limit=50).hits
        assert rid in [h.record.id for h in hits], "accepted append not findable"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(appends=st.lists(variant(), min_size=1, max_size=40))
def test_property_random_appends_never_store_duplicates_and_stay_findable(
    appends: list[tuple[str, str]],
) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = RecallStore(Path(d), "p")
        accepted = [r.record.id for r in (store.append(k, t) for k, t in appends) if r.accepted]
        assert_store_invariants(store, accepted)


WORKER = r"""
import json, sys, time
from pathlib import Path
from stratamem.core.workspace.recall.store import RecallStore
directory, items_file, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
items = json.loads(Path(items_file).read_text())
store = RecallStore(Path(directory), "shared")
while not go.exists():
    time.sleep(0.005)
print(json.dumps([r.record.id for r in (store.append(k, t) for k, t in items) if r.accepted]))
"""


def run_two_processes(
    directory: Path, first: list[tuple[str, str]], second: list[tuple[str, str]]
) -> list[str]:
    go = directory / "go"
    cmds = {}
    for n, items in enumerate((first, second)):
        f = directory / f"items{n}.json"
        f.write_text(json.dumps(items))
        cmds[f"writer{n}"] = python_cmd(WORKER, str(directory), str(f), str(go))
    results = run_together(cmds, deadline_s=240, started=go.touch)
    assert_all_ok(results)
    accepted: list[str] = []
    for r in results.values():
        accepted.extend(json.loads(r.stdout))
    return accepted


def test_two_real_processes_appending_the_same_variants_store_each_once(tmp_path: Path) -> None:
    variants = [("decision", v) for v in ["Use uv.", "use uv", "USE UV!", "  use   uv "]] * 5
    variants += [("solution", "restart the worker"), ("solution", "Restart the worker!!")] * 5
    RecallStore(tmp_path, "shared")  # schema created once up front
    accepted = run_two_processes(tmp_path, variants, list(reversed(variants)))
    store = RecallStore(tmp_path, "shared")
    assert store.count("decision") == 1 and store.count("solution") == 1
    assert len(accepted) == 2
    assert_store_invariants(store, accepted)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(appends=st.lists(variant(), min_size=2, max_size=24))
def test_property_concurrent_appends_from_two_processes_keep_the_invariants(
    appends: list[tuple[str, str]],
) -> None:
    with tempfile.TemporaryDirectory() as d:
        directory = Path(d)
        RecallStore(directory, "shared")
        accepted = run_two_processes(directory, appends, list(reversed(appends)))
        assert_store_invariants(RecallStore(directory, "shared"), accepted)
