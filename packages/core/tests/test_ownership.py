"""The one ownership rule: its LanceDB and SQLite filters select exactly the rows its Python
predicates accept, over every owner/share combination, and hostile ids stay literals."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from stratamem.contract.dtos import Namespace
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.ownership import Scope, is_owned, is_visible, quote

# stored rows always carry owner columns (NOT NULL in SQLite, set by every writer in LanceDB)
KINDS = ["alpha", "beta", "unknown", "it's"]
PROFILES = ["default", "pa", "o'brien"]
SCOPES = ["private", "public", "local", "hub"]
READERS = [
    Namespace(agent_kind="alpha", profile_id="default"),
    Namespace(agent_kind="alpha", profile_id="pa"),
    Namespace(agent_kind="beta", profile_id="default"),
    Namespace(agent_kind="it's", profile_id="o'brien"),
    Namespace(),
]


def _rows() -> list[dict[str, object]]:
    out = []
    for i, (kind, profile, share) in enumerate(itertools.product(KINDS, PROFILES, SCOPES)):
        out.append(
            {
                "id": f"tr_{i}",
                "episode_id": "ep",
                "session_id": "s",
                "ts": i,
                "turn_id": i,
                "user_text": "x",
                "search_text": "x",
                "owner_agent_kind": kind,
                "owner_profile_id": profile,
                "share_scope": share,
                "priority": 0.5,
            }
        )
    return out


async def test_lance_filters_match_the_python_predicates(tmp_path: Path) -> None:
    store = await LanceStore(tmp_path, 8, "m", {}).open()
    rows = _rows()
    await store.upsert("traces", rows)
    try:
        for ns in READERS:
            for scope, pred in ((Scope.visible(ns), is_visible), (Scope.owned(ns), is_owned)):
                got = {r["id"] for r in await store.scan("traces", scope, None, 10_000)}
                want = {r["id"] for r in rows if pred(r, ns)}
                assert got == want, (ns, scope.mode)
                assert want == {r["id"] for r in rows if scope.accepts(r)}
        alpha = Namespace(agent_kind="alpha", profile_id="default")
        seen = {r["id"] for r in rows if is_visible(r, alpha)}
        # the rule itself (memos-core §2.2): another profile's private row is hidden, its public
        # row is visible to the same agent kind only, hub rows to everyone, legacy rows to all
        by = {
            (r["owner_agent_kind"], r["owner_profile_id"], r["share_scope"]): r["id"] for r in rows
        }
        assert by[("alpha", "pa", "private")] not in seen
        assert by[("alpha", "pa", "public")] in seen
        assert by[("beta", "default", "public")] not in seen
        assert by[("beta", "default", "hub")] in seen
        assert by[("unknown", "pa", "private")] in seen
        assert by[("it's", "o'brien", "public")] not in seen
        # ownership is exact: sharing and legacy rows never grant a write
        owned = {r["id"] for r in rows if is_owned(r, alpha)}
        assert by[("alpha", "pa", "hub")] not in owned
        assert by[("unknown", "default", "private")] not in owned
    finally:
        store.close()


def test_sqlite_filters_match_the_python_predicates() -> None:
    c = sqlite3.connect(":memory:")
    c.row_factory = sqlite3.Row
    c.execute(
        "CREATE TABLE t (id TEXT, owner_agent_kind TEXT, owner_profile_id TEXT, share_scope TEXT)"
    )
    rows = _rows()
    c.executemany(
        "INSERT INTO t VALUES (?,?,?,?)",
        [(r["id"], r["owner_agent_kind"], r["owner_profile_id"], r["share_scope"]) for r in rows],
    )
    for ns in READERS:
        for scope in (Scope.visible(ns), Scope.owned(ns)):
            got = {r["id"] for r in c.execute(f"SELECT id FROM t WHERE {scope.where}")}
            assert got == {r["id"] for r in rows if scope.accepts(r)}, (ns, scope.mode)


def test_quote_keeps_hostile_text_a_literal() -> None:
    assert quote("a' OR '1'='1") == "'a'' OR ''1''=''1'"
    assert Scope.everything("reembed").where == "true"
    with pytest.raises(ValueError):
        Scope.everything("")
