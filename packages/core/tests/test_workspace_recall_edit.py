"""Removing and replacing recall records: matched by id or exact normalised text, serialised per
(project, kind) like appends, typed errors that change nothing, and never an exact duplicate."""

from __future__ import annotations

import json
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from together import assert_all_ok, python_cmd, run_together

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.recall import RecallStore, normalize_recall_content
from stratamem.core.workspace.service import WorkspaceMemory


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


@pytest.fixture
def store(tmp_path: Path) -> RecallStore:
    return RecallStore(tmp_path / "recall", "proj-a", clock=Clock())


def snapshot(store: RecallStore) -> list[tuple[str, str, str, str, int]]:
    return sorted(
        (r.id, r.kind, r.content, r.content_hash, r.updated_at) for r in store.candidates()
    )


def contents(store: RecallStore, kind: str) -> list[str]:
    return sorted(r.content for r in store.candidates([kind]))


# -- remove ------------------------------------------------------------------------------------


def test_remove_by_exact_normalised_text_deletes_the_record_and_returns_it(
    store: RecallStore,
) -> None:
    kept = store.append("preference", "The user writes British English.").record
    gone = store.append("preference", "Prefers tabs over spaces.").record
    removed = store.remove("preference", "  prefers TABS over spaces!! ")
    assert removed.id == gone.id and removed.content == "Prefers tabs over spaces."
    assert [r.id for r in store.candidates(["preference"])] == [kept.id]
    assert store.search("tabs spaces", kinds=["preference"]).hits == []
    assert store.append("preference", "Prefers tabs over spaces.").accepted  # no stale twin


def test_remove_by_id_deletes_exactly_that_record(store: RecallStore) -> None:
    a = store.append("decision", "Adopt pluggy hooks for extension points.").record
    b = store.append("decision", "Store vectors in LanceDB.").record
    assert store.remove("decision", a.id).id == a.id
    assert [r.id for r in store.candidates(["decision"])] == [b.id]


def test_remove_only_matches_inside_its_kind(store: RecallStore) -> None:
    record = store.append("solution", "Restart the worker after a config change.").record
    before = snapshot(store)
    for match in (record.id, record.content):
        with pytest.raises(StratamemError) as err:
            store.remove("decision", match)
        assert err.value.code is ErrorCode.NOT_FOUND
    assert snapshot(store) == before


def test_remove_with_a_partial_text_is_not_found_and_changes_nothing(store: RecallStore) -> None:
    store.append("preference", "Prefers dark mode in every editor.")
    before = snapshot(store)
    with pytest.raises(StratamemError) as err:
        store.remove("preference", "dark mode")
    assert err.value.code is ErrorCode.NOT_FOUND
    assert err.value.details["kind"] == "preference"
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("kind", "match"),
    [
        ("opinion", "Prefers dark mode"),
        ("preference", ""),
        ("preference", "   "),
        ("preference", 7),
    ],
)
def test_bad_removes_are_invalid_argument_and_change_nothing(
    store: RecallStore, kind: str, match: object
) -> None:
    store.append("preference", "Prefers dark mode in every editor.")
    before = snapshot(store)
    with pytest.raises(StratamemError) as err:
        store.remove(kind, match)  # type: ignore[arg-type]
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert snapshot(store) == before


# -- replace -----------------------------------------------------------------------------------


def test_replace_keeps_id_and_creation_time_and_swaps_the_content(store: RecallStore) -> None:
    old = store.append(
        "preference", "Prefers tea in the morning.", tags=["drinks"], source={"agent_id": "a1"}
    ).record
    result = store.replace("preference", "prefers tea in the morning", "Prefers coffee, black.")
    assert not result.merged and result.previous == old
    new = result.record
    assert (new.id, new.created_at, new.tags, new.agent_id) == (
        old.id,
        old.created_at,
        ("drinks",),
        "a1",
    )
    assert new.content == "Prefers coffee, black." and new.updated_at > old.updated_at
    assert new.content_hash != old.content_hash
    assert contents(store, "preference") == ["Prefers coffee, black."]
    assert [h.record.id for h in store.search("coffee", kinds=["preference"]).hits] == [old.id]
    assert store.search("tea morning", kinds=["preference"]).hits == []
    dup = store.append("preference", "prefers coffee, black")
    assert not dup.accepted and dup.duplicate_reason == "exact" and dup.record.id == old.id
    assert store.append("preference", "Prefers tea in the morning.").accepted


def test_replace_by_id_can_override_tags_source_and_graph_ids(store: RecallStore) -> None:
    old = store.append("decision", "Use SQLite for recall.", tags=["db"]).record
    new = store.replace(
        "decision",
        old.id,
        "Use SQLite in WAL mode for recall.",
        tags=["DB", "wal"],
        source={"origin": "review", "session_id": "s9"},
        kg_node_ids=["n1"],
    ).record
    assert new.tags == ("db", "wal") and new.kg_node_ids == ("n1",)
    assert (new.origin, new.session_id) == ("review", "s9")
    assert store.candidates(["decision"], tags=["wal"])[0].id == old.id


def test_replace_onto_text_another_record_holds_merges_instead_of_duplicating(
    store: RecallStore,
) -> None:
    holder = store.append("preference", "Prefers coffee, black.").record
    other = store.append("preference", "Prefers tea in the morning.").record
    result = store.replace("preference", other.id, "PREFERS COFFEE, BLACK!")
    assert result.merged and result.record.id == holder.id and result.previous.id == other.id
    assert contents(store, "preference") == ["Prefers coffee, black."]


def test_a_replace_that_only_changes_case_updates_the_same_record(store: RecallStore) -> None:
    old = store.append("preference", "prefers vim keybindings").record
    result = store.replace("preference", old.id, "Prefers Vim keybindings.")
    assert not result.merged and result.record.id == old.id
    assert contents(store, "preference") == ["Prefers Vim keybindings."]


@pytest.mark.parametrize(
    ("match", "content", "extra", "code"),
    [
        ("Prefers tea in the morning.", "   ", {}, ErrorCode.INVALID_ARGUMENT),
        ("Prefers tea in the morning.", "!!!", {}, ErrorCode.INVALID_ARGUMENT),
        ("Prefers tea in the morning.", "x" * 20_000, {}, ErrorCode.INVALID_ARGUMENT),
        (
            "Prefers tea in the morning.",
            "Coffee.",
            {"source": {"x": 1}},
            ErrorCode.INVALID_ARGUMENT,
        ),
        ("Prefers tea in the morning.", "Coffee.", {"tags": "drinks"}, ErrorCode.INVALID_ARGUMENT),
        ("", "Coffee.", {}, ErrorCode.INVALID_ARGUMENT),
        ("Prefers tea", "Coffee.", {}, ErrorCode.NOT_FOUND),
        ("rc_0000", "Coffee.", {}, ErrorCode.NOT_FOUND),
    ],
)
def test_bad_or_unmatched_replaces_are_typed_and_change_nothing(
    store: RecallStore, match: str, content: str, extra: dict[str, object], code: ErrorCode
) -> None:
    store.append("preference", "Prefers tea in the morning.")
    store.append("decision", "Coffee.")
    before = snapshot(store)
    with pytest.raises(StratamemError) as err:
        store.replace("preference", match, content, **extra)  # type: ignore[arg-type]
    assert err.value.code is code
    assert snapshot(store) == before


# -- serialisation -----------------------------------------------------------------------------


def test_remove_and_replace_wait_for_the_kind_lock_and_other_kinds_do_not(
    store: RecallStore,
) -> None:
    store.append("preference", "Prefers tea in the morning.")
    store.append("preference", "Prefers short answers.")
    store.append("decision", "Use uv for the workspace.")
    finished: list[str] = []
    with store._kind_lock("preference"):
        workers = [
            threading.Thread(
                target=lambda: (
                    store.replace("preference", "prefers tea in the morning", "Prefers coffee."),
                    finished.append("replace"),
                )
            ),
            threading.Thread(
                target=lambda: (
                    store.remove("preference", "Prefers short answers"),
                    finished.append("remove"),
                )
            ),
        ]
        other = threading.Thread(
            target=lambda: (
                store.remove("decision", "use uv for the workspace"),
                finished.append("d"),
            )
        )
        for t in [*workers, other]:
            t.start()
        other.join(10)
        assert finished == ["d"], "a decision edit waited for the preference lock"
        time.sleep(0.3)  # the preference edits had time to run, yet must still be waiting
        assert finished == ["d"]
        assert contents(store, "preference") == [
            "Prefers short answers.",
            "Prefers tea in the morning.",
        ]
    for t in workers:
        t.join(10)
    assert sorted(finished) == ["d", "remove", "replace"]
    assert contents(store, "preference") == ["Prefers coffee."]


def test_threads_replacing_different_records_onto_one_text_leave_it_once(tmp_path: Path) -> None:
    store = RecallStore(tmp_path / "r", "p")
    ids = [store.append("solution", f"fix number {i} for topic{i}").record.id for i in range(6)]
    barrier = threading.Barrier(len(ids))
    errors: list[BaseException] = []

    def worker(rid: str) -> None:
        barrier.wait()
        try:
            store.replace("solution", rid, "Restart the worker!")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(rid,)) for rid in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert contents(store, "solution") == ["Restart the worker!"]


def test_threads_removing_the_same_record_succeed_once(tmp_path: Path) -> None:
    store = RecallStore(tmp_path / "r", "p")
    store.append("decision", "Adopt pluggy hooks.")
    barrier = threading.Barrier(5)
    outcomes: list[str] = []

    def worker() -> None:
        barrier.wait()
        try:
            store.remove("decision", "adopt pluggy hooks")
            outcomes.append("removed")
        except StratamemError as exc:
            outcomes.append(exc.code.value)

    threads = [threading.Thread(target=worker) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["not_found"] * 4 + ["removed"]
    assert store.count() == 0


CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from stratamem.core.workspace.recall import RecallStore

    store = RecallStore(Path(sys.argv[1]), "shared")
    merged = []
    for rid in json.loads(sys.argv[2]):
        merged.append(store.replace("solution", rid, "Restart the worker!").merged)
    print(json.dumps(merged))
    """
)


def test_two_processes_replacing_onto_one_text_leave_it_once(tmp_path: Path) -> None:
    store = RecallStore(tmp_path, "shared")
    ids = [store.append("solution", f"fix number {i} for topic{i}").record.id for i in range(16)]
    results = run_together(
        {
            f"child{n}": python_cmd(CHILD, str(tmp_path), json.dumps(part))
            for n, part in enumerate((ids[0::2], ids[1::2]))
        },
        deadline_s=240,
    )
    assert_all_ok(results)
    merged: list[bool] = []
    for r in results.values():
        merged.extend(json.loads(r.stdout))
    assert merged.count(False) == 1  # exactly one record took the text; all others merged into it
    assert contents(RecallStore(tmp_path, "shared"), "solution") == ["Restart the worker!"]


# -- the model: any sequence of appends, replaces and removes --------------------------------

TEXTS = ["Use uv.", "use UV", "Prefer tabs!", "prefer tabs", "Dark mode.", "Short answers"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["append", "replace", "remove"]),
            st.sampled_from(TEXTS),
            st.sampled_from(TEXTS),
        ),
        max_size=25,
    )
)
def test_property_edits_match_a_set_of_normalised_texts_and_never_duplicate(
    ops: list[tuple[str, str, str]],
) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = RecallStore(Path(d), "p")
        model: set[str] = set()
        for op, a, b in ops:
            na, nb = normalize_recall_content(a), normalize_recall_content(b)
            try:
                if op == "append":
                    store.append("preference", a)
                    model.add(na)
                elif op == "replace":
                    store.replace("preference", a, b)
                    model.discard(na)
                    model.add(nb)
                else:
                    store.remove("preference", a)
                    model.discard(na)
            except StratamemError as exc:
                assert exc.code is ErrorCode.NOT_FOUND and na not in model
        stored = [normalize_recall_content(r.content) for r in store.candidates()]
        assert sorted(stored) == sorted(model)


# -- through the service -----------------------------------------------------------------------


def test_workspace_memory_removes_and_replaces_recall_for_a_project_root(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    memory = WorkspaceMemory(tmp_path / "home")
    memory.append_recall(root, "preference", "Prefers tea in the morning.")
    memory.append_recall(root, "preference", "Prefers short answers.")
    replaced = memory.replace_recall(root, "preference", "prefers tea in the morning", "Coffee.")
    assert replaced.record.content == "Coffee."
    assert memory.remove_recall(root, "preference", "Prefers short answers").content == (
        "Prefers short answers."
    )
    assert [h.record.content for h in memory.search_recall(root).hits] == ["Coffee."]
    with pytest.raises(StratamemError) as err:
        memory.replace_recall("relative/project", "preference", "Coffee.", "Tea.")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert [h.record.content for h in memory.search_recall(root).hits] == ["Coffee."]
