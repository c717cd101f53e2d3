"""End to end through LocalCore with the real embedder and LanceDB: on a small conversation, the
shipped tier-2 fusion (score-calibrated, lifted by session neighbours and by a date in the query)
finds what plain rank fusion misses."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from capture_support import ingest_sessions

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK
from stratamem.core.engine.assemble import open_local_core

NS = Namespace("chat", "ann-bob")


def ts(y: int, m: int, d: int) -> int:
    return int(dt.datetime(y, m, d, 15, tzinfo=dt.UTC).timestamp() * 1000)


# (session date, [(user turn, assistant turn)]): one memory per pair of turns, speaker in the text
SESSIONS = [
    (
        ts(2024, 1, 8),
        [
            (
                "Ann: Hi Bob! What have you been up to lately?",
                "Bob: I finally started that research project I kept talking about.",
            ),
            (
                "Ann: Oh nice, which one was it again?",
                "Bob: Comparing adoption agencies in our county, we want to adopt a child.",
            ),
            ("Ann: That is lovely news.", "Bob: Thanks, we are very excited."),
        ],
    ),
    (
        ts(2024, 2, 12),
        [
            ("Ann: I went to a pottery class on Saturday.", "Bob: Fun! Did you make anything?"),
            ("Ann: A blue bowl for my mum.", "Bob: She will love it."),
            (
                "Ann: I love buying things for my new flat, I bought a new lamp today.",
                "Bob: Shopping spree!",
            ),
        ],
    ),
    (
        ts(2024, 3, 4),
        [
            (
                "Ann: Guess what, yesterday I bought myself a kayak!",
                "Bob: Wow, where will you paddle?",
            ),
            ("Ann: On the lake near my parents.", "Bob: Sounds peaceful."),
        ],
    ),
    (
        ts(2024, 4, 1),
        [
            ("Bob: Our team at work published a paper on bees.", "Ann: Congrats on the paper!"),
            ("Ann: I got new running shoes.", "Bob: Ha, what brand?"),
            ("Bob: My family went camping by the lake.", "Ann: Camping sounds relaxing."),
        ],
    ),
]
QUESTIONS = {
    # the turn that matches the words asks; the answer is the next memory of the session
    "What did Bob research?": "0.1",
    # only the date tells which purchase: the lamp matches "buy" better than the kayak
    "What did Ann buy on 3 March, 2024?": "2.0",
}


async def _top3(home: Path, keys: dict[str, str], **overrides: object) -> dict[str, list[str]]:
    core = await open_local_core(home, **overrides)
    try:
        out = {}
        for text in QUESTIONS:
            res = await core.search(
                RetrievalQuery(agent="chat", query=text, namespace=NS, top_k=TopK(0, 3, 0))
            )
            out[text] = [keys.get(h.ref_id, h.ref_kind) for h in res.hits]
        return out
    finally:
        await core.shutdown()


async def _ingest(home: Path) -> dict[str, str]:
    return await ingest_sessions(home, SESSIONS, NS)


async def test_calibrated_fusion_finds_the_answer_turn_and_the_dated_memory(tmp_path: Path) -> None:
    keys = await _ingest(tmp_path)
    shipped = await _top3(tmp_path, keys)
    rank_fusion = await _top3(tmp_path, keys, retrieval__trace_fusion="rrf")
    for text, gold in QUESTIONS.items():
        assert gold in shipped[text], (text, shipped[text])
        assert gold not in rank_fusion[text], (text, rank_fusion[text])


async def test_a_hyphenated_word_in_the_question_is_not_an_identifier_that_empties_recall(
    tmp_path: Path,
) -> None:
    # "beginner-friendly" (17 chars with a hyphen) once counted as an exact identifier: every trace
    # without that spelling became ineligible and the search returned nothing at all
    keys = await _ingest(tmp_path)
    core = await open_local_core(tmp_path)
    try:
        res = await core.search(
            RetrievalQuery(
                agent="chat",
                query="Which beginner-friendly pottery class did Ann go to?",
                namespace=NS,
                top_k=TopK(0, 3, 0),
            )
        )
    finally:
        await core.shutdown()
    assert "1.0" in [keys.get(h.ref_id) for h in res.hits]
