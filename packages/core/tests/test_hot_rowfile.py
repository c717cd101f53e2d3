"""The hot index's row side file: every row reads back exactly as written (values and their types)
after appends, rewrites, deletes and compactions, with readers in other threads; the file has no
name, so a process killed mid-write leaves nothing in the directory."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stratamem.core.hotindex import rowfile
from stratamem.core.hotindex.rowfile import RowFile

TEXT = st.text(alphabet=st.sampled_from("ab \n-é\x00"), max_size=90)
VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    TEXT,
    st.lists(TEXT, max_size=3),
    st.lists(st.integers(), max_size=2),
    st.tuples(TEXT),
    st.dictionaries(TEXT, st.integers(), max_size=2),
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


def _row_same(got: dict[str, object] | None, want: dict[str, object]) -> bool:
    return got is not None and list(got) == list(want) and all(_same(got[k], want[k]) for k in want)


ROW = st.tuples(*[VALUE] * len(COLS)).map(lambda v: dict(zip(COLS, v, strict=True)))
rows_strategy = st.lists(ROW, min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(rows_strategy)
def test_rows_read_back_exactly(rows: list[dict[str, object]]) -> None:
    store = RowFile()
    for r in rows:
        store.append(r)
    store.extend_from_columns(COLS, [[r[c] for r in rows] for c in COLS])
    both = [*rows, *rows]
    assert len(store) == len(both)
    for i, r in enumerate(both):
        assert _row_same(store[i], r), (store[i], r)
    assert all(_row_same(a, b) for a, b in zip(store, both, strict=True))
    got = store.column("search_text")
    assert all(_same(g, r["search_text"]) for g, r in zip(got, both, strict=True))


def test_a_read_is_a_fresh_copy_and_values_marshal_refuses_round_trip() -> None:
    store = RowFile()
    row = {"id": "tr_1", "tags": ["a"], "score": np.float32(0.25), "n": np.int64(7)}
    store.append(row)
    got = store[0]
    assert got is not None and got["tags"] == ["a"]
    assert type(got["score"]) is np.float32 and got["score"] == np.float32(0.25)
    assert type(got["n"]) is np.int64
    got["tags"].append("b")
    assert store[0] == row  # changing a read changes nothing held


def test_deletes_rewrites_and_compaction_keep_every_row_exact() -> None:
    store = RowFile()
    rows = {i: {"id": f"tr_{i}", "text": f"row {i} " * 20, "v": 0} for i in range(300)}
    for i in range(300):
        store.append(rows[i])
    for v in range(1, 40):  # rewrite most rows many times: dead bytes pile up, then compact
        for i in range(0, 300, 3):
            rows[i] = {**rows[i], "v": v, "text": f"row {i} v{v} " * 20}
            store[i] = rows[i]
    for i in range(1, 300, 7):
        store[i] = None
        rows.pop(i)
    store[-1] = {"id": "last"}
    rows[299] = {"id": "last"}
    for i in range(300):
        assert store[i] == rows.get(i)
    live = sum(len(str(r)) for r in rows.values())
    # compacted at least once: the file holds about the live rows, not 40 versions of a third
    assert store.file_bytes() < 2 * live + rowfile.COMPACT_MIN_BYTES
    assert store.column("v") == [
        rows[i]["v"] if i in rows and "v" in rows[i] else None for i in range(300)
    ]


def test_a_row_longer_than_the_location_field_reads_back() -> None:
    store = RowFile()
    big = "x" * (rowfile.LONG + 10)
    store.append({"id": "a", "text": "short"})
    store.append({"id": "b", "text": big})
    store.append({"id": "c", "text": "after"})
    assert store[1] == {"id": "b", "text": big}
    assert store.column("text") == ["short", big, "after"]
    store[1] = None
    store[0] = {"id": "a", "text": "again"}
    assert store[0] == {"id": "a", "text": "again"} and store[2] == {"id": "c", "text": "after"}


def test_readers_in_other_threads_see_whole_rows_while_a_writer_rewrites_and_compacts() -> None:
    store = RowFile()
    n = 200
    for i in range(n):
        store.append({"id": f"tr_{i}", "v": 0, "text": f"{i}:0 " * 50})
    stop = threading.Event()
    errors: list[str] = []

    def read() -> None:
        while not stop.is_set():
            for i in range(0, n, 13):
                row = store[i]
                if row is None:
                    continue  # deleted in this round
                v = row["v"]
                if row["id"] != f"tr_{i}" or row["text"] != f"{i}:{v} " * 50:
                    errors.append(f"slot {i}: {row!r:.80}")

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        for v in range(1, 60):
            for i in range(n):
                store[i] = (
                    None
                    if (i + v) % 17 == 0
                    else {"id": f"tr_{i}", "v": v, "text": f"{i}:{v} " * 50}
                )
            store.column("text")
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=60)
    assert not errors, errors[:3]
    assert store.file_bytes() < 4 * n * 300 + rowfile.COMPACT_MIN_BYTES


_CHILD = """
import sys
from stratamem.core.hotindex.rowfile import RowFile
store = RowFile(sys.argv[1])
for i in range(2000):
    store.append({"id": f"tr_{i}", "text": "x" * 500})
print("ready", flush=True)
sys.stdin.read()
"""


def test_the_file_has_no_name_and_a_killed_process_leaves_nothing_behind(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert os.listdir(tmp_path) == []  # ~1 MB written, no name in the directory
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert os.listdir(tmp_path) == []
    # a store in the same directory starts empty: nothing to pick up or clean
    assert len(RowFile(tmp_path)) == 0
