"""A token's postings read back as written through every change of its posting count: held packed
with one posting, as arrays from the second, packed again when removals bring it back to one, gone
at none. Checked against a plain model (token -> {slot: tf}) over random writes: one-by-one adds,
bulk loads, rewrites in place (a slot re-added below a token's other postings) and removals; and
the pruned BM25 top-k still equals the exhaustive scorer over such postings."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lexical_support import indexed_bytes, lists

from stratamem.core.hotindex.lexical import Lexical, analyze, scoring

try:
    from stratamem.core.hotindex.lexical import singles
except ImportError:  # the code before the compact one-posting store
    singles = None  # type: ignore[assignment]
try:
    from stratamem.core.hotindex.lexical import singlefile
except ImportError:  # the code before the one-posting side file
    singlefile = None  # type: ignore[assignment]
try:
    from stratamem.core.hotindex.lexical import postfile
except ImportError:  # the code before the postings' side file
    postfile = None  # type: ignore[assignment]

# few words, most of them rare: tokens keep crossing between one posting and two
VOCAB = [f"q{i}z" for i in range(24)]
WEIGHTS = [1.0 / (i + 1) ** 1.5 for i in range(len(VOCAB))]


@pytest.fixture(autouse=True)
def _prune_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scoring, "PRUNE_MIN_POSTINGS", 0)
    monkeypatch.setattr(scoring, "_BOUND_MIN_DF", 2)
    if singles is not None:  # the one-posting store's table rebuilt nearly every add
        monkeypatch.setattr(singles, "_MIN_SLOTS", 2)
    if singlefile is not None:  # the one-posting file's table rebuilt nearly every add
        monkeypatch.setattr(singlefile, "_MIN_SLOTS", 2)
        monkeypatch.setattr(singlefile, "_MANY", 2)
    if postfile is not None:  # tokens of a few postings go to the side file, which compacts
        monkeypatch.setattr(postfile, "SPILL", 2)
        monkeypatch.setattr(postfile, "COMPACT_MIN_BYTES", 0)


def _text(rng: random.Random) -> str:
    words = rng.choices(VOCAB, WEIGHTS, k=rng.randrange(1, 6))
    return " ".join([*words, f"n{rng.randrange(10**6)}"])  # plus a word (nearly) no text shares


def _expect(docs: dict[int, str]) -> dict[str, dict[int, float]]:
    want: dict[str, dict[int, float]] = {}
    for slot, text in docs.items():
        for tok, tf in Counter(analyze(text)).items():
            want.setdefault(tok, {})[slot] = float(tf)
    return want


def _check(lex: Lexical, docs: dict[int, str], seen: set[str], rng: random.Random) -> None:
    want = _expect(docs)
    seen.update(want)
    for tok in seen:
        got = lex.postings(tok)
        exp = want.get(tok, {})
        assert lex.df(tok) == len(exp), tok
        if not exp:
            assert got is None, tok
            continue
        assert got is not None, tok
        slots, tfs = got
        assert slots.dtype == np.int32 and tfs.dtype in (np.uint8, np.float32)
        assert slots.tolist() == sorted(exp), tok
        assert tfs.tolist() == [exp[s] for s in sorted(exp)], tok
        del got, slots, tfs  # (views: a write must be free to resize the arrays)
    assert sorted(lex.tokens()) == sorted(want)
    n = max(docs, default=0) + 1
    mask = np.array([rng.random() > 0.2 for _ in range(n)], dtype=bool)
    for _ in range(4):
        toks = [*rng.sample(VOCAB, rng.randrange(1, 5)), rng.choice(sorted(seen))]
        limit = rng.choice([1, 3, 10])
        assert lex.bm25(toks, mask, limit) == lex.bm25_exhaustive(toks, mask, limit)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_postings_read_back_through_adds_bulk_loads_rewrites_and_removals(seed: int) -> None:
    rng = random.Random(seed)
    lex = Lexical()
    docs: dict[int, str] = {}
    seen: set[str] = set()
    nxt = 0
    for _ in range(12):
        op = rng.random()
        if op < 0.25:  # a bulk load of fresh slots
            texts = [_text(rng) for _ in range(rng.randrange(1, 8))]
            lex.add_many(nxt, texts)
            docs.update({nxt + i: t for i, t in enumerate(texts)})
            nxt += len(texts)
        elif op < 0.5 or not docs:  # fresh slots, one by one
            for _ in range(rng.randrange(1, 4)):
                docs[nxt] = _text(rng)
                lex.add(nxt, docs[nxt])
                nxt += 1
        elif op < 0.75:  # rewrites in place: the slot comes back below later postings
            for slot in rng.sample(sorted(docs), min(len(docs), rng.randrange(1, 4))):
                lex.remove(slot, docs[slot])
                docs[slot] = rng.choice([_text(rng), docs[slot]])
                lex.add(slot, docs[slot])
        else:
            for slot in rng.sample(sorted(docs), min(len(docs), rng.randrange(1, 4))):
                lex.remove(slot, docs.pop(slot))
        _check(lex, docs, seen, rng)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_postings_read_back_when_every_token_shares_one_hash(seed: int) -> None:
    """Tokens told apart by their bytes, not their hash: the same walk with every hash equal."""
    assert singles is not None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(singles, "_hash", lambda tok: 7)
        if singlefile is not None:
            mp.setattr(singlefile, "_hash", lambda tok: 7)
        test_postings_read_back_through_adds_bulk_loads_rewrites_and_removals.hypothesis.inner_test(
            seed
        )


def test_one_posting_tokens_cost_no_python_object_each() -> None:
    """A table whose texts each bring a token no other text has (the soak's running numbers):
    the postings' allocations per text, traced. The tokens held as a dict of strings to ints
    cost 138 B a text here; the compact store 76 (soak-session11.md)."""
    n = 20_000
    texts = [f"alpha beta gamma {1_000_003 + 7 * i}" for i in range(n)]
    lex, held = indexed_bytes(texts)
    assert lex.df(str(1_000_003 + 7 * 123)) == 1 and lex.df("alpha") == n
    assert held / n <= 100, f"{held / n:.1f} B a text"


def test_a_token_goes_from_one_posting_to_two_and_back() -> None:
    lex = Lexical()
    lex.add(5, "lone q1z q1z")
    assert lex.df("lone") == 1
    lex.add(2, "lone")  # the second posting lands below the first
    assert lists(lex, "lone") == ([2, 5], [1.0, 1.0])
    lex.remove(2, "lone")
    assert lists(lex, "lone") == ([5], [1.0]) and lex.df("lone") == 1
    assert lists(lex, "q1z") == ([5], [2.0])
    lex.add_many(6, ["lone lone lone", "solo"])  # a bulk load promotes it again
    assert lists(lex, "lone") == ([5, 6], [1.0, 3.0])
    lex.remove(5, "lone q1z q1z")
    lex.remove(6, "lone lone lone")
    assert lists(lex, "lone") is None and lex.df("lone") == 0 and lists(lex, "q1z") is None
    assert sorted(lex.tokens()) == ["solo"]
    lex.remove(6, "lone lone lone")  # a second removal changes nothing
    assert lex.docs == 1


def test_a_single_posting_scores_like_the_same_posting_held_with_others() -> None:
    # "rare" has one posting in ``lex``; in ``ref`` it has two, the second removed again
    lex, ref = Lexical(), Lexical()
    texts = ["rare common", "common word", "common thing words"]
    for i, t in enumerate(texts):
        lex.add(i, t)
        ref.add(i, t)
    ref.add(3, "rare")
    ref.remove(3, "rare")
    mask = np.ones(4, dtype=bool)
    assert ref.df("rare") == lex.df("rare") == 1
    want = ref.bm25_exhaustive(["rare", "common"], mask, 3)
    assert lex.bm25(["rare", "common"], mask, 3) == want
    assert lex.bm25_exhaustive(["rare", "common"], mask, 3) == want
    assert want[0][0] == 0


def test_removing_a_slot_with_a_text_it_does_not_hold_leaves_other_slots_postings() -> None:
    lex = Lexical()
    lex.add(0, "alpha")
    lex.add(1, "beta")
    lex.remove(1, "alpha beta")  # "alpha" is held by slot 0 only
    assert lists(lex, "alpha") == ([0], [1.0]) and lists(lex, "beta") is None


def test_term_frequencies_cost_a_byte_a_posting() -> None:
    """Tokens with many postings (soak traces share a few hundred words): their slots take four
    bytes a posting and their term frequencies one (held as float32 they took four: 8.9 B a
    posting here, the postings' largest part with the slots, soak-session13-lexmem.md)."""
    n = 5_000
    rng = random.Random(3)
    texts = [" ".join(rng.choices(VOCAB, k=12)) for _ in range(n)]
    lex = Lexical()
    for i, t in enumerate(texts):
        lex.add(i, t)
    postings = sum(lex.df(tok) for tok in lex.tokens())
    assert postings > 40_000
    assert lex.nbytes() / postings <= 6.5, f"{lex.nbytes() / postings:.2f} B a posting"


def test_a_term_frequency_above_255_widens_its_token_and_scores_the_same() -> None:
    lex, ref = Lexical(), Lexical()
    texts = ["big " * 300 + "other", "big small", "small " * 2 + "big", "other small"]
    for i, t in enumerate(texts):
        lex.add(i, t)
    ref.add_many(0, texts)
    for got in (lex, ref):
        assert lists(got, "big") == ([0, 1, 2], [300.0, 1.0, 1.0])
        assert lists(got, "small") == ([1, 2, 3], [1.0, 2.0, 1.0])
    lex.add(4, "big " * 256)
    lex.remove(0, texts[0])
    assert lists(lex, "big") == ([1, 2, 4], [1.0, 1.0, 256.0])
    mask = np.ones(5, dtype=bool)
    assert lex.bm25(["big", "small"], mask, 3) == lex.bm25_exhaustive(["big", "small"], mask, 3)
