"""Tokens with one posting in a side file (``lexical/singlefile.py``): every lookup, put, pop and
listing equals a dict's, through rebuilds and with every token sharing one hash."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem.core.hotindex.lexical import singlefile
from stratamem.core.hotindex.lexical.singlefile import SingleFile


def _walk(seed: int) -> None:
    rng = random.Random(seed)
    store, want = SingleFile(), {}
    words = [f"t{i}" for i in range(60)] + ["", "é", "日本", "\udcff"]
    for _ in range(400):
        tok = rng.choice(words)
        op = rng.random()
        if op < 0.5:
            if tok not in want:
                want[tok] = rng.randrange(2**62)
                store.put(tok, want[tok])
        elif op < 0.8:
            assert store.pop(tok) == want.pop(tok, None)
        else:
            assert store.get(tok) == want.get(tok)
            assert store.has(tok) == (tok in want) == (tok in store)
        assert len(store) == len(want)
    assert sorted(store) == sorted(want)
    for tok in words:
        assert store.get(tok) == want.get(tok)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_reads_equal_a_dict_through_puts_pops_and_rebuilds(seed: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(singlefile, "_MIN_SLOTS", 2)
        _walk(seed)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_tokens_told_apart_by_their_bytes_when_every_hash_is_equal(seed: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(singlefile, "_MIN_SLOTS", 2)
        mp.setattr(singlefile, "_hash", lambda tok: 7)
        _walk(seed)


def test_the_file_grows_and_nothing_per_token_stays_resident() -> None:
    store = SingleFile()
    for i in range(5000):
        store.put(f"n{i}", i)
    assert store.nbytes() == 0 and store.file_bytes() > 5000 * 24
    assert [store.get(f"n{i}") for i in (0, 1234, 4999)] == [0, 1234, 4999]
    assert store.get("n5000") is None


@pytest.mark.parametrize("many", [1, 10**9])
def test_put_many_equals_one_put_each(monkeypatch: pytest.MonkeyPatch, many: int) -> None:
    """A bulk load's new tokens placed in one rewrite (or one put each) read back the same."""
    monkeypatch.setattr(singlefile, "_MANY", many)
    rng = random.Random(3)
    store, want = SingleFile(), {}
    for i in range(300):
        want[f"a{i}"] = i
        store.put(f"a{i}", i)
    for i in range(0, 300, 3):
        store.pop(f"a{i}")
        del want[f"a{i}"]
    toks = [f"b{i}" for i in range(700)] + ["é", "日本"]
    vals = [rng.randrange(2**62) for _ in toks]
    store.put_many(toks, vals)
    want.update(zip(toks, vals, strict=True))
    assert len(store) == len(want) and sorted(store) == sorted(want)
    for tok in [*want, "a0", "zz"]:
        assert store.get(tok) == want.get(tok), tok


def test_put_many_rewrites_the_file_only_when_the_table_must_grow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bulk load's batches that fit the table are put one by one: a rewrite for every batch
    (each one copying every token held) would grow a load's cost with the square of its size."""
    monkeypatch.setattr(singlefile, "_MANY", 1)
    store = SingleFile()
    store.put_many([f"a{i}" for i in range(1000)], list(range(1000)))  # grows: one rewrite
    grown = store._spill
    assert store.file_bytes() > 0 and grown is not None
    store.put_many([f"b{i}" for i in range(200)], list(range(200)))  # fits: no rewrite
    assert store._spill is grown
    assert len(store) == 1200 and store.get("a999") == 999 and store.get("b199") == 199
