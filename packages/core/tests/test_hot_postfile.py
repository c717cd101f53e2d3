"""Long postings live in a side file (``lexical/postfile.py``): they cost the process no bytes per
posting, and every read, score and count equals the postings held in memory."""

from __future__ import annotations

import random

import numpy as np
import pytest
from lexical_support import indexed_bytes, lists

from stratamem.core.hotindex.lexical import Lexical, analyze


def test_long_postings_cost_no_resident_bytes_per_posting() -> None:
    """Eight words in every text: 160k postings. Held in arrays they cost 5 B each (4 for the
    slot, 1 for the term frequency) plus the arrays' slack, ~45 B a text here; what stays is
    the document's length (4 B a text) and, per token, its newest postings and its record's
    numbers."""
    n = 20_000
    words = "alpha beta gamma delta epsilon zeta theta kappa"
    texts = [words] * n
    lex, held = indexed_bytes(texts)
    assert lex.df("alpha") == n and lex.df("kappa") == n
    got = lex.postings("gamma")
    assert got is not None and got[0].tolist() == list(range(n))
    assert held / n <= 8, f"{held / n:.1f} B a text"


def test_scores_equal_the_postings_held_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same texts indexed twice, once with every posting in memory: BM25 (pruned and
    exhaustive), the weighted overlap, the counts and the postings are the same bits."""
    from stratamem.core.hotindex.lexical import postfile

    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(300)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    texts = [" ".join(rng.choices(vocab, weights, k=rng.randrange(1, 12))) for _ in range(3000)]
    filed = Lexical()
    filed.add_many(0, texts[:1000])
    for i, t in enumerate(texts[1000:], start=1000):
        filed.add(i, t)
    for slot in rng.sample(range(3000), 300):  # rewrites in place and removals
        filed.remove(slot, texts[slot])
        if slot % 2:
            texts[slot] = " ".join(rng.choices(vocab, weights, k=4))
            filed.add(slot, texts[slot])
        else:
            texts[slot] = ""
    assert filed._file.file_bytes() > 0 and len(filed._file) > 50
    monkeypatch.setattr(postfile, "SPILL", 10**9)
    held = Lexical()
    for i, t in enumerate(texts):
        if t:
            held.add(i, t)
    assert not len(held._file)
    for tok in vocab:
        assert filed.df(tok) == held.df(tok), tok
        assert lists(filed, tok) == lists(held, tok), tok
    mask = np.array([rng.random() > 0.1 for _ in range(3000)], dtype=bool)
    for _ in range(50):
        toks = rng.sample(vocab, rng.randrange(1, 6))
        assert filed.bm25(toks, mask, 10) == held.bm25(toks, mask, 10)
        assert filed.bm25_exhaustive(toks, mask, 10) == held.bm25_exhaustive(toks, mask, 10)
        ws = [rng.random() for _ in toks]
        assert filed.weighted(toks, ws, mask, 10) == held.weighted(toks, ws, mask, 10)


def test_a_filed_token_widened_and_brought_back_to_one_posting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stratamem.core.hotindex.lexical import postfile

    monkeypatch.setattr(postfile, "SPILL", 2)
    lex = Lexical()
    for slot in (1, 3, 5, 7):
        lex.add(slot, "tok")
    assert "tok" in lex._file
    lex.add(2, "tok")  # a rewritten slot among the file's postings
    assert lists(lex, "tok") == ([1, 2, 3, 5, 7], [1.0] * 5)
    lex.add(9, " ".join(["tok"] * 300))  # a count past a byte: the token held whole, float32
    assert "tok" not in lex._file
    assert lists(lex, "tok") == ([1, 2, 3, 5, 7, 9], [1.0] * 5 + [300.0])
    for slot in (9, 1, 2, 3, 5):
        lex.remove(slot, "tok" if slot != 9 else " ".join(["tok"] * 300))
    assert lists(lex, "tok") == ([7], [1.0]) and lex.df("tok") == 1
    for slot in (10, 11, 12):
        lex.add(slot, "tok")
    assert "tok" in lex._file
    for slot in (10, 11, 12):
        lex.remove(slot, "tok")
    assert lists(lex, "tok") == ([7], [1.0]) and "tok" not in lex._file
    lex.remove(7, "tok")
    assert lex.postings("tok") is None and lex.df("tok") == 0


def test_one_posting_tokens_cost_no_resident_bytes_each() -> None:
    """Texts that each bring one token no other text has (the soak's running numbers): held in
    the compact arrays (``singles.py``) they cost ~45 B a text with the table's room; in the side
    file (``singlefile.py``) what stays is the document's length, 4 B a text."""
    n = 20_000
    texts = [str(1_000_003 + 7 * i) for i in range(n)]
    lex, held = indexed_bytes(texts)
    assert lex.df(texts[123]) == 1 and lists(lex, texts[4567]) == ([4567], [1.0])
    assert held / n <= 8, f"{held / n:.1f} B a text"


def test_an_update_of_other_columns_leaves_the_postings_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An update that keeps a row's text (a priority, a reward, a backfilled vector) neither
    takes its postings out nor puts them back: long postings are in the side file, where that
    rewrites each record the row's tokens hold. The postings and scores are those of before;
    an update of the text still re-indexes it."""
    from stratamem.core.hotindex.table import HotTable

    t = HotTable("traces", ("vec_summary",), 8, {})
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta"]
    t.upsert(
        [
            {
                "id": f"r{i}",
                "search_text": " ".join(words[: 1 + i % 4]) + f" n{i}",
                "priority": 0.5,
                "vec_summary": rng.standard_normal(8).astype(np.float32),
            }
            for i in range(200)
        ]
    )
    before = {w: lists(t.lex, w) for w in [*words, "n7"]}
    mask = np.ones(200, dtype=bool)
    scores = t.lex.bm25(["alpha", "gamma", "n7"], mask, 20)
    calls: list[str] = []
    monkeypatch.setattr(t.lex, "remove", lambda *a: calls.append("remove"))
    monkeypatch.setattr(t.lex, "add", lambda *a: calls.append("add"))
    t.update("r7", {"priority": 0.9})
    t.update("r8", {"vec_summary": rng.standard_normal(8).astype(np.float32)})
    assert calls == []
    monkeypatch.undo()
    assert {w: lists(t.lex, w) for w in before} == before
    assert t.lex.bm25(["alpha", "gamma", "n7"], mask, 20) == scores
    assert t.rows[t.slot_of.get("r7")]["priority"] == 0.9
    t.update("r7", {"search_text": "omega"})
    assert lists(t.lex, "omega") == ([7], [1.0]) and t.lex.df("n7") == 0


def test_a_batch_delete_rewrites_each_record_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deleting many rows that share common words rewrites each word's record in the side file
    once for the batch, not once per row (at 100k rows, 2,000 deletes one by one took 4.0 s
    against 0.31 s with the postings in memory); the postings left, the counts and the scores
    equal a fresh index of the rows that stay, the tokens that lost every posting included."""
    from stratamem.core.hotindex.lexical import postfile
    from stratamem.core.hotindex.table import HotTable

    monkeypatch.setattr(postfile, "SPILL", 4)
    rng = random.Random(11)
    common = [f"c{i}" for i in range(12)]
    texts = {
        f"r{i}": " ".join([*rng.sample(common, 4), f"only{i}", f"pair{i // 2}"]) for i in range(400)
    }
    texts["r0"] += " lonely lonely"  # lonely: one row, deleted below with its every posting
    t = HotTable("traces", ("vec_summary",), 8, {})
    t.upsert(
        [
            {"id": rid, "search_text": tx, "vec_summary": np.ones(8, dtype=np.float32)}
            for rid, tx in texts.items()
        ]
    )
    gone = [f"r{i}" for i in rng.sample(range(400), 150)] + ["r0", "r1", "missing"]
    writes: list[str] = []  # a record written (a drop writes nothing: it frees the room)
    real = t.lex._file._write
    monkeypatch.setattr(t.lex._file, "_write", lambda tok, *a: (writes.append(tok), real(tok, *a)))
    t.delete(gone)
    assert writes
    assert len(writes) == len(set(writes)), "a record rewritten more than once"
    monkeypatch.undo()
    keep = {rid: tx for rid, tx in texts.items() if rid not in gone}
    fresh = Lexical()
    slot_of = {rid: t.slot_of.get(rid) for rid in keep}
    for rid, tx in keep.items():
        fresh.add(slot_of[rid], tx)
    vocab = {tok for tx in texts.values() for tok in analyze(tx)}
    for tok in vocab:
        assert t.lex.df(tok) == fresh.df(tok), tok
        assert lists(t.lex, tok) == lists(fresh, tok), tok
    assert t.lex.postings("lonely") is None and "lonely" not in t.lex._slots
    mask = np.zeros(t.n, dtype=bool)
    mask[[slot_of[r] for r in keep]] = True
    for _ in range(20):
        toks = rng.sample(sorted(vocab), 3)
        assert t.lex.bm25(toks, mask, 10) == fresh.bm25(toks, mask, 10)
