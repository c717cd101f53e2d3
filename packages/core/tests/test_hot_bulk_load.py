"""The hot index's bulk load (``HotTable.load_batch``, column by column from Arrow) builds exactly
what the write-through path (``HotTable.upsert`` of the same rows, one ``_put`` per row) builds:
same slots, rows, filter columns, codes, postings and unit vectors, so every query answers the
same; writes after a bulk load behave as after incremental ones; a reload of a live home serves
the same hits, scores and context."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnResult
from stratamem.core import open_core
from stratamem.core.hotindex.table import HotTable, rows_of
from stratamem.core.storage.ownership import Scope
from stratamem.core.storage.schemas import traces_schema

DIM = 16
VEC_COLS = ("vec_summary", "vec_action")
WORDS = [
    "boat",
    "kayak",
    "moored",
    "pier",
    "nine",
    "having",
    "because",
    "running",
    "runs",
    "ran",
    "Zürich",
    "café",
    "naïve",
    "password",
    "locker",
    "combination",
    "seventeen",
    "postgres",
    "staging",
    "port",
    "the",
    "and",
    "of",
    "dogs",
    "dog",
    "東京タワー",
    "北京大学",
    "서울",
    "supercalifragilisticexpialidocious-and-then-some-more-letters",
]
PROFILES = ("alpha", "beta", "gamma")


def _text(rng: random.Random) -> str | None:
    if rng.random() < 0.05:
        return None
    if rng.random() < 0.05:
        return ""
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 14))]
    words += [str(rng.randint(0, 500)) for _ in range(rng.randint(0, 2))]
    return " ".join(words)


def _vec(rng: random.Random, np_rng: np.random.Generator) -> Any:
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.13:
        return [0.0] * DIM  # a zero norm holds no vector
    if r < 0.15:
        return [float("nan")] * DIM  # nor does a non-finite one
    return (np_rng.standard_normal(DIM) * rng.uniform(0.1, 5)).astype(np.float32).tolist()


def _row(i: int, rng: random.Random, np_rng: np.random.Generator) -> dict[str, Any]:
    scope = rng.choice(("private", "private", "public", "agent"))
    return {
        "id": f"tr_{i}",
        "episode_id": f"ep_{i // 7}",
        "session_id": f"s_{rng.randint(0, 30)}" if rng.random() > 0.05 else "",
        "ts": rng.choice((0, rng.randint(1, 10**12))),
        "turn_id": i,
        "user_text": _text(rng) or "",
        "search_text": _text(rng),
        "tags": rng.sample(["a", "b", "c", "kitchen"], rng.randint(0, 3)) or None,
        "priority": rng.choice((None, 0.0, rng.random())),
        "owner_agent_kind": rng.choice(("hermes", "openclaw")),
        "owner_profile_id": rng.choice(PROFILES),
        "owner_workspace_id": rng.choice((None, "ws1")),
        "share_scope": scope,
        "share_target": "hermes" if scope == "agent" else None,
        "vec_summary": _vec(rng, np_rng),
        "vec_action": _vec(rng, np_rng),
    }


def _batches(rows: list[dict[str, Any]], size: int) -> Iterator[pa.RecordBatch]:
    schema = traces_schema(DIM)
    names = set(schema.names)
    table = pa.Table.from_pylist(
        [{k: v for k, v in r.items() if k in names} for r in rows], schema=schema
    )
    yield from table.to_batches(max_chunksize=size)


def _pair(rows: list[dict[str, Any]], size: int = 64) -> tuple[HotTable, HotTable]:
    """(bulk-built, built row by row through the write-through path) from the same batches."""
    bulk = HotTable("traces", VEC_COLS, DIM, {})
    inc = HotTable("traces", VEC_COLS, DIM, {})
    bulk.reserve(len(rows))
    inc.reserve(len(rows))
    for batch in _batches(rows, size):
        bulk.load_batch(batch)
        inc.upsert(rows_of(batch, VEC_COLS))
    return bulk, inc


def _assert_same_state(a: HotTable, b: HotTable) -> None:
    assert a.n == b.n and a.live == b.live
    ids = list(a.ids)
    assert ids == list(b.ids) and len(a.slot_of) == len(b.slot_of) == a.live
    assert all(a.slot_of[i] == b.slot_of[i] == s for s, i in enumerate(ids) if i is not None)
    assert list(a.rows) == list(b.rows)
    n = a.n
    for attr in ("alive", "owner", "priority", "ts", "session"):
        assert np.array_equal(getattr(a, attr)[:n], getattr(b, attr)[:n]), attr
    assert a._owner_keys == b._owner_keys and a._owner_code == b._owner_code
    assert dict(a.session_code.items()) == dict(b.session_code.items())
    assert a.by_session == b.by_session
    assert {k: v for k, v in a.tags.items() if v} == {k: v for k, v in b.tags.items() if v}
    for c in VEC_COLS:
        assert np.array_equal(a.has[c][:n], b.has[c][:n]), c
        ha = a.has[c][:n]
        if ha.any():
            # bit for bit: the same unit vectors, so the same cosine scores
            held = np.flatnonzero(ha)
            for x, y in zip(a.codes[c].read(held), b.codes[c].read(held), strict=True):
                assert x.tobytes() == y.tobytes(), c
            assert a.resid[c].read(held).tobytes() == b.resid[c].read(held).tobytes(), c
    la, lb = a.lex, b.lex
    assert la._docs == lb._docs and la._total == lb._total
    assert list(la._len) == list(lb._len)
    assert set(la.tokens()) == set(lb.tokens())
    for tok in la.tokens():
        got_a, got_b = la.postings(tok), lb.postings(tok)
        assert got_a is not None and got_b is not None, tok
        assert got_a[0].tolist() == got_b[0].tolist(), tok
        assert got_a[1].tolist() == got_b[1].tolist(), tok
    assert a.texts() == b.texts()


def _scopes() -> list[Scope]:
    out = []
    for kind in ("hermes", "openclaw"):
        for p in PROFILES:
            ns = Namespace(agent_kind=kind, profile_id=p)
            out += [Scope.visible(ns), Scope.owned(ns)]
    return out


def _assert_same_answers(a: HotTable, b: HotTable, rng: random.Random, queries: int) -> None:
    np_rng = np.random.default_rng(rng.randint(0, 10**6))
    scopes = _scopes()
    for _ in range(queries):
        scope = rng.choice(scopes)
        ma, mb = a.scope_mask(scope), b.scope_mask(scope)
        assert np.array_equal(ma, mb)
        q = np_rng.standard_normal(DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        for c in VEC_COLS:
            assert a.vector(c, q, ma, 10) == b.vector(c, q, mb, 10)
        toks = [rng.choice(("boat", "run", "dog", "東京", "caf", "17", "password"))]
        toks += [rng.choice(("pier", "nine", "staging", "zurich", "dogs"))]
        assert a.lex.bm25(toks, ma, 10) == b.lex.bm25(toks, mb, 10)
        assert a.lex.weighted(toks, [1.0, 0.5], ma, 10) == b.lex.weighted(toks, [1.0, 0.5], mb, 10)
        needle = rng.choice(("boat", "Pier", "café", "東京"))
        assert a.sub.find(a.texts, needle, ma, 20) == b.sub.find(b.texts, needle, mb, 20)
        sid = f"s_{rng.randint(0, 30)}"
        assert a.session_order(sid) == b.session_order(sid)
        assert np.array_equal(a.session_slots(sid), b.session_slots(sid))
        tags = rng.sample(["a", "b", "kitchen", "none"], 2)
        assert np.array_equal(a.tag_mask(tags), b.tag_mask(tags))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_bulk_load_builds_what_the_write_through_path_builds(seed: int) -> None:
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    rows = [_row(i, rng, np_rng) for i in range(300)]
    bulk, inc = _pair(rows, size=rng.choice((1, 37, 64, 300)))
    _assert_same_state(bulk, inc)
    _assert_same_answers(bulk, inc, rng, 60)


def test_writes_after_a_bulk_load_match_writes_after_incremental_ones() -> None:
    rng = random.Random(9)
    np_rng = np.random.default_rng(9)
    rows = [_row(i, rng, np_rng) for i in range(250)]
    bulk, inc = _pair(rows)
    fresh = [_row(i, rng, np_rng) for i in range(250, 300)]
    changed = [_row(i, rng, np_rng) for i in rng.sample(range(250), 30)]  # rewrites in place
    gone = [f"tr_{i}" for i in rng.sample(range(300), 40)]
    for t in (bulk, inc):
        t.upsert([*fresh, *changed])
        t.update("tr_3", {"priority": 0.75, "search_text": "kayak shed four"})
        t.update("tr_260", {"owner_profile_id": "beta", "session_id": "s_2"})
        t.delete(gone)
    _assert_same_state(bulk, inc)
    _assert_same_answers(bulk, inc, rng, 60)
    # a later batch still loads in bulk after those writes, and one with a known id falls back
    more = [_row(i, rng, np_rng) for i in range(300, 340)]
    again = [_row(i, rng, np_rng) for i in (5, 6, 400)]
    for batch in _batches(more, 64):
        bulk.load_batch(batch)
        inc.upsert(rows_of(batch, VEC_COLS))
    for batch in _batches(again, 64):
        bulk.load_batch(batch)
        inc.upsert(rows_of(batch, VEC_COLS))
    _assert_same_state(bulk, inc)
    _assert_same_answers(bulk, inc, rng, 40)


async def test_a_reload_serves_the_same_hits_scores_and_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    nss = [Namespace(agent_kind="hermes", profile_id=p) for p in PROFILES]
    async with open_core(tmp_path) as core:
        for i in range(120):
            ns = nss[i % 3]
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
            await core.turn_end(
                TurnResult(
                    agent="hermes",
                    session_id=f"s{i % 9}",
                    user_text=f"{words} {i}",
                    agent_text=rng.choice(("noted", "ok, kept that", "sure")),
                    ts=int(time.time() * 1000) + i,
                    namespace=ns,
                )
            )
        await core.flush(30)
        queries = [
            (ns, " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))))
            for ns in nss
            for _ in range(12)
        ]

        async def answers() -> list[Any]:
            out = []
            for ns, text in queries:
                res = await core.search(RetrievalQuery(agent="hermes", query=text, namespace=ns))
                out.append(
                    (
                        [(h.ref_id, h.score, h.snippet, h.score_details) for h in res.hits],
                        res.injected_context,
                    )
                )
            return out

        written = await answers()  # served from the write-through index
        assert any(hits for hits, _ in written)
        await core.store.reload_hot()
        bulk = await answers()
        with monkeypatch.context() as m:  # the load as it was: every row through ``upsert``
            m.setattr(HotTable, "load_batch", lambda t, b: t.upsert(rows_of(b, t.vec_cols)))
            await core.store.reload_hot()
            row_by_row = await answers()
        assert bulk == row_by_row
        assert bulk == written


def test_rows_read_back_as_written_and_a_read_copy_changes_nothing_held() -> None:
    rng = random.Random(4)
    np_rng = np.random.default_rng(4)
    rows = [_row(i, rng, np_rng) for i in range(40)]
    bulk, inc = _pair(rows, size=16)
    extra = {"id": "tr_x", "owner_agent_kind": "hermes", "owner_profile_id": "alpha", "note": 1}
    for t in (bulk, inc):
        t.upsert([extra])
        t.update("tr_7", {"priority": 0.25})
        t.delete(["tr_8"])
    for t in (bulk, inc):
        want = {k: v for k, v in rows[7].items() if k not in VEC_COLS}
        got7 = t.rows[7]
        assert got7 is not None and got7["priority"] == 0.25
        assert {k: got7[k] for k in want if k != "priority"} == {
            k: v for k, v in want.items() if k != "priority"
        }
        assert all(v is None for k, v in got7.items() if k not in want)  # the schema's others
        assert t.rows[8] is None and "tr_8" not in t.slot_of
        assert t.rows[t.slot_of["tr_x"]] == extra
        got = t.rows[3]
        assert got is not None
        got["search_text"] = "changed"
        assert t.rows[3] != got and t.full_row(3)["search_text"] != "changed"
    assert t.texts()[t.slot_of["tr_x"]] is None and t.texts()[8] is None
