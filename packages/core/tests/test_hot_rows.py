"""The hot index's row store: every row reads back exactly as written (values and their types),
while repeated values, a text repeated in its row and ``search_text`` built from the row's texts are
held once."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem.core.hotindex.rows import RowStore

TEXT = st.text(alphabet=st.sampled_from("ab \n-é"), max_size=90)
VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    TEXT,
    st.lists(TEXT, max_size=3),
    st.lists(st.integers(), max_size=2),
    st.tuples(TEXT),
)
COLS = ("user_text", "agent_text", "summary", "tags", "value", "search_text", "extra")


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _row(draw: st.DrawFn) -> dict[str, object]:
    row = {c: draw(VALUE) for c in COLS[:5]}
    texts = [v for v in row.values() if isinstance(v, str)]
    lists = [
        " ".join(v)
        for v in row.values()
        if isinstance(v, list) and all(isinstance(x, str) for x in v)
    ]
    pieces = draw(st.lists(st.sampled_from([*texts, *lists, "lit", ""]), max_size=5))
    row["search_text"] = "\n".join(pieces)
    row["extra"] = draw(st.sampled_from([*texts, None]))
    return row


rows_strategy = st.lists(st.composite(_row)(), min_size=1, max_size=20)


@settings(max_examples=300, deadline=None)
@given(rows_strategy)
def test_rows_read_back_exactly(rows: list[dict[str, object]]) -> None:
    store = RowStore()
    for r in rows:
        store.append(r)
    store.extend_columns(COLS, [tuple(r.values()) for r in rows])
    store.extend_from_columns(COLS, [[r[c] for r in rows] for c in COLS])
    for i, r in enumerate([*rows, *rows, *rows]):
        got = store[i]
        assert got is not None
        assert list(got) == list(r)
        assert all(_same(got[k], r[k]) for k in r), (got, r)
    assert store.column("search_text") == [r["search_text"] for r in [*rows, *rows, *rows]]


def test_texts_repeated_in_a_row_or_across_rows_are_held_once() -> None:
    user = "what did I name the telescope I bought last spring in the shop? " * 2
    agent = "You named it Halley, after the comet, and keep it on the balcony by the door."
    rows = [
        {
            "id": f"tr_{i:08d}",
            "user_text": user + str(i),
            "agent_text": agent,
            "summary": user + str(i),
            "tags": ["lightweight_memory"],
            "priority": 0.5,
            "owner_agent_kind": "hermes",
            "share_scope": "private",
            "search_text": f"{user}{i}\n{agent}\n{user}{i}\nlightweight_memory",
        }
        for i in range(200)
    ]
    store = RowStore()
    for r in rows:
        store.append(r)
    texts = len(user) + len(agent)
    # each row's text and answer held once (+ ~450 B of id, tuple, pieces), not the summary and
    # search_text again (that was ~1.25 KB a row here)
    assert store.nbytes() / len(rows) < texts + 500
    assert store[7] == rows[7]
