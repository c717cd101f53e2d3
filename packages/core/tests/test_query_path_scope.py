"""The query path reads the store only through an ownership ``Scope`` (issue 16).

Statically: no query-path module takes a raw LanceDB table (``maintenance_table`` is for named
maintenance jobs, and ``LanceStore`` has no other raw accessor), reaches into the store's private
tables, or passes a plain filter string where the store wants a ``Scope``. Behaviourally: a
``ScopedTable`` cannot be widened by the ``where`` its caller builds.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import stratamem.core
from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import StratamemError
from stratamem.core.hotindex import HotIndex, ScopedHotTable
from stratamem.core.retrieval import hot_channels as hc
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.ownership import Scope

CORE = Path(stratamem.core.__file__).parent
#: the modules that serve callers' reads and writes (everything but storage/ and upkeep)
QUERY_PATH = ("retrieval", "hotindex", "engine", "learning", "viewer", "workspace", "server")
#: named maintenance jobs that may hold a raw table
MAINTENANCE = {"engine/maintenance.py", "storage/reembed.py", "hotindex/footprint.py"}
ALICE = Namespace(agent_kind="hermes", profile_id="alice")
BOB = Namespace(agent_kind="hermes", profile_id="bob")


def _query_path_modules() -> list[Path]:
    out = [p for d in QUERY_PATH for p in sorted((CORE / d).rglob("*.py"))]
    out += [CORE / "local.py"]
    return [p for p in out if str(p.relative_to(CORE)) not in MAINTENANCE]


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    rel = path.relative_to(CORE)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("maintenance_table", "_tables"):
            found.append(f"{rel}:{node.lineno} uses {node.attr}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "table"
            and "store" in ast.unparse(node.func.value)
        ):
            found.append(f"{rel}:{node.lineno} reads a raw store table")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("table", "tables")
            and "hot" in ast.unparse(node.value)
        ):
            found.append(f"{rel}:{node.lineno} reads a raw hot-index table")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("vector_search", "fts_search", "scan", "get_rows", "count")
        ):
            scope_at = {"vector_search": 3, "fts_search": 2, "scan": 1, "get_rows": 2, "count": 1}
            i = scope_at[node.func.attr]
            if "store" in ast.unparse(node.func.value) and len(node.args) > i:
                arg = node.args[i]
                if isinstance(arg, ast.Constant | ast.JoinedStr | ast.BinOp):
                    found.append(f"{rel}:{node.lineno} passes a filter string as the scope")
    return found


def test_no_query_path_module_reads_the_store_without_a_scope() -> None:
    modules = _query_path_modules()
    assert len(modules) > 40  # the walk found the packages
    problems = [v for p in modules for v in _violations(p)]
    assert problems == []


def test_the_store_offers_raw_tables_only_to_named_jobs() -> None:
    public = {n for n, _ in inspect.getmembers(LanceStore, inspect.isfunction) if n[0] != "_"}
    assert "table" not in public
    hot_public = {n for n, _ in inspect.getmembers(HotIndex, inspect.isfunction) if n[0] != "_"}
    assert "table" not in hot_public and {"scoped", "maintenance_table"} <= hot_public
    params = inspect.signature(HotIndex.scoped).parameters
    assert params["scope"].annotation in (Scope, "Scope")
    for name in ("get_rows", "scan", "count", "vector_search", "fts_search", "scoped"):
        params = inspect.signature(getattr(LanceStore, name)).parameters
        assert params["scope"].annotation in (Scope, "Scope"), name


def _row(i: int, ns: Namespace, text: str) -> dict[str, object]:
    vec = np.zeros(8, dtype=np.float32)
    vec[i % 8] = 1.0
    return {
        "id": f"tr_{ns.profile_id}_{i}",
        "episode_id": "ep",
        "session_id": f"s_{ns.profile_id}",
        "ts": 1_000 + i,
        "turn_id": i,
        "user_text": text,
        "agent_text": text,
        "search_text": text,
        "owner_agent_kind": ns.agent_kind,
        "owner_profile_id": ns.profile_id,
        "share_scope": "private",
        "priority": 0.5,
        "vec_summary": vec,
    }


async def test_a_scoped_table_cannot_be_widened_by_its_where(tmp_path: Path) -> None:
    store = await LanceStore(tmp_path, 8, "m", {"hot_index": False}).open()
    try:
        rows = [_row(i, ALICE, f"alice note {i}") for i in range(4)]
        rows += [_row(i, BOB, f"bob secret {i}") for i in range(4)]
        await store.upsert("traces", rows)
        await store.ensure_indexes()
        t = store.scoped("traces", Scope.visible(ALICE))
        widen = "true OR owner_profile_id = 'bob'"
        got = await t.query().where(widen).limit(100).to_list()
        assert sorted(r["id"] for r in got) == [f"tr_alice_{i}" for i in range(4)]
        assert await t.query().where("owner_profile_id = 'bob'").to_list() == []
        assert await t.count_rows() == 4 and await t.count_rows(widen) == 4
        q = np.eye(8, dtype=np.float32)[1]
        near = await t.query().nearest_to(q).column("vec_summary").where(widen).limit(8).to_list()
        assert {r["owner_profile_id"] for r in near} == {"alice"}
        fts = await t.query().nearest_to_text("secret").where(widen).limit(8).to_list()
        assert fts == []
        # no where at all still reads through the scope
        assert len(await t.query().limit(100).to_list()) == 4
        vs = await store.vector_search("traces", "vec_summary", q, Scope.visible(BOB), 8)
        assert {r["owner_profile_id"] for r in vs} == {"bob"}
        hits = await store.fts_search("traces", "note", Scope.visible(BOB), 8, where=widen)
        assert hits == []
        with pytest.raises(ValueError):
            store.maintenance_table("traces", "")
    finally:
        store.close()


async def test_a_scoped_hot_table_cannot_be_widened_by_its_mask(tmp_path: Path) -> None:
    """The hot index's tables reach the query path only as ``ScopedHotTable`` views: a mask built
    for a wider scope is narrowed to the view's, and a row outside it is refused, not returned.
    (The old ``HotIndex.table(name)`` handed out the raw table: every namespace's rows.)"""
    store = await LanceStore(tmp_path, 8, "m", {"hot_index": True}).open()
    try:
        rows = [_row(i, ALICE, f"alice note {i}") for i in range(4)]
        rows += [_row(i, BOB, f"bob secret {i}") for i in range(4)]
        await store.upsert("traces", rows)
        assert store.hot is not None
        view = store.hot.scoped("traces", Scope.visible(ALICE))
        assert isinstance(view, ScopedHotTable)
        everything = Scope.everything("test")
        wide = view.scope_mask(everything)
        assert sorted(str(view.ids[s]) for s in np.flatnonzero(wide)) == [
            f"tr_alice_{i}" for i in range(4)
        ]
        q = np.eye(8, dtype=np.float32)[1]
        hits = hc.vector(view, "vec_summary", q, wide, 8)
        assert {r["owner_profile_id"] for r, _ in hits} == {"alice"}
        with pytest.raises(StratamemError):  # a hand-made mask past the scope fails closed
            hc.vector(view, "vec_summary", q, np.ones(view.n, dtype=bool), 8)
        bob_slot = view.slot_of["tr_bob_1"]
        for read in (lambda: view.full_row(bob_slot), lambda: view.rows[bob_slot]):
            with pytest.raises(StratamemError) as err:
                read()
            assert err.value.code == "permission_denied"
        assert view.full_row(view.slot_of["tr_alice_1"])["user_text"] == "alice note 1"
        # a view shares the table's state: a later write shows at once, still scoped
        await store.upsert("traces", [_row(9, ALICE, "alice late"), _row(9, BOB, "bob late")])
        assert view.full_row(view.slot_of["tr_alice_9"])["user_text"] == "alice late"
        with pytest.raises(StratamemError):
            view.full_row(view.slot_of["tr_bob_9"])
        raw = store.hot.maintenance_table("traces", "test")
        assert raw is not None and raw.full_row(bob_slot)["user_text"] == "bob secret 1"
        with pytest.raises(ValueError):
            store.hot.maintenance_table("traces", "")
    finally:
        store.close()


async def test_two_scoped_views_of_one_table_keep_their_own_scopes(tmp_path: Path) -> None:
    """Views share the table's state, never each other's scope (nor write one into the table)."""
    store = await LanceStore(tmp_path, 8, "m", {"hot_index": True}).open()
    try:
        rows = [_row(i, ALICE, f"alice note {i}") for i in range(2)]
        rows += [_row(i, BOB, f"bob secret {i}") for i in range(2)]
        await store.upsert("traces", rows)
        assert store.hot is not None
        alice = store.hot.scoped("traces", Scope.visible(ALICE))
        bob = store.hot.scoped("traces", Scope.visible(BOB))
        assert alice is not None and bob is not None
        a_slot, b_slot = alice.slot_of["tr_alice_0"], alice.slot_of["tr_bob_0"]
        assert alice.rows[a_slot] and bob.rows[b_slot]  # each reads its own
        for view, foreign in ((alice, b_slot), (bob, a_slot)):
            with pytest.raises(StratamemError):
                view.rows[foreign]
        raw = store.hot.maintenance_table("traces", "test")
        assert raw is not None and "_view" not in vars(raw.rows) and "scope" not in vars(raw)
    finally:
        store.close()
