"""Minted ids: unique within one millisecond (the journal appends new trace rows without a join on
``id``, so a collision would store two rows under one id) and sorted by creation for centuries."""

from __future__ import annotations

import pytest

from stratamem.core import ids


def test_ids_minted_in_one_millisecond_do_not_collide(monkeypatch: pytest.MonkeyPatch) -> None:
    # a frozen clock: every id shares the head, only the random tail tells them apart. With the
    # old 25-bit tail, 50k ids held ~37 colliding pairs; with 45 bits the chance of one is ~4e-5
    monkeypatch.setattr(ids.time, "time", lambda: 1_764_770_000.123)
    minted = [ids.new_id("tr") for _ in range(50_000)]
    assert len(set(minted)) == len(minted)


def test_ids_sort_by_creation_across_years(monkeypatch: pytest.MonkeyPatch) -> None:
    # the old 35-bit head wrapped every 397 days: an id minted 400 days later sorted first
    minted = []
    for seconds in (1_764_770_000.0, 1_764_770_000.0 + 400 * 86_400, 4_102_444_800.0):
        monkeypatch.setattr(ids.time, "time", lambda s=seconds: s)
        minted.append(ids.new_id("ep"))
    assert minted == sorted(minted)
    assert all(m.startswith("ep_") and len(m) == 3 + 18 for m in minted)


def test_ids_minted_in_one_millisecond_sort_in_minting_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # rows sharing a timestamp are ordered by id (session neighbours): with a random tail, two
    # turns captured in one millisecond came back in either order
    monkeypatch.setattr(ids.time, "time", lambda: 1_764_770_000.123)
    minted = [ids.new_id("tr") for _ in range(1_000)]
    assert minted == sorted(minted)
    assert len({m[3:12] for m in minted}) == 1  # one head: the same millisecond


def test_ids_keep_increasing_when_the_clock_steps_back(monkeypatch: pytest.MonkeyPatch) -> None:
    minted = []
    for seconds in (1_764_770_000.5, 1_764_770_000.2, 1_764_770_000.2, 1_764_770_001.0):
        monkeypatch.setattr(ids.time, "time", lambda s=seconds: s)
        minted.append(ids.new_id("tr"))
    assert minted == sorted(minted) and len(set(minted)) == len(minted)


def test_a_forked_child_does_not_continue_the_parents_sequence() -> None:
    import os

    ids.new_id("tr")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether its sequence was reset, then leave at once, whatever
        try:  # happens (an exception here would go on running the suite in a copy of pytest)
            os.write(write, b"1" if getattr(ids, "_last", [0])[0] == -1 else b"0")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert ids._last[0] != -1  # the parent's own sequence goes on
