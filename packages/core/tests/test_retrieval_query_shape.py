"""The query-shape classifier (retrieval/query_shape.py) and the gate it puts on the final pick's
session diversity, end to end through LocalCore with the real embedder and LanceDB."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from capture_support import ingest_sessions

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.retrieval.query_shape import asks_for_set, gated, plural_noun

SET_QUERIES = [
    "How many times did Ann move house?",  # 1: counting
    "How often does Bob go swimming?",
    "What number of pets does Ann keep?",
    "Has Ann ever been to Japan?",  # 2: quantifiers
    "Tell me all the places I stayed in.",
    "Where did Ann go every summer?",
    "What do both of them enjoy?",
    "What books has Ann read this year?",  # 3: plural wh-phrase
    "Which cities did Bob visit in Spain?",
    "What kinds of music does Ann like?",
    "What other outdoor hobbies has Bob picked up?",
    "What sports do the children play?",
    "What are Ann's favourite dishes?",  # 3: plural agreement
    "Who were Bob's teammates?",
    "What did Ann and Bob cook?",  # 4: named entities joined by "and"
    "Where did Ann's and Bob's parents meet?",
    "List the restaurants we talked about.",  # 5: a list, or more
    "What else did Bob buy?",
]
POINTED_QUERIES = [
    "What did Bob research?",
    "When did Ann go to Rome?",
    "Where does Bob live now?",
    "What is Ann's sister called?",
    "Which city did Bob move to?",
    "What was the name of Bob's dog?",
    "What makes Ann happy?",  # "makes" is a verb: no auxiliary follows a noun phrase
    "What are you working on?",  # "you" takes "are" in the singular too
    "Did Ann like the film at all?",
    "Did they help each other?",
    "What bus does Ann take to work?",
    "What class does Bob teach?",
    "What news did Ann share?",
    "Which series is Bob watching?",
    "What does James like to eat?",
    "What Console does Nate own?",
    "",
    "我上周买了什么？",
]


@pytest.mark.parametrize("text", SET_QUERIES)
def test_set_asking_queries_are_told_by_their_grammar(text: str) -> None:
    assert asks_for_set(text)


@pytest.mark.parametrize("text", POINTED_QUERIES)
def test_pointed_queries_are_not(text: str) -> None:
    assert not asks_for_set(text)


def test_plural_nouns_by_their_form() -> None:
    for word in ("books", "cities", "dishes", "ideas", "people", "children", "kids"):
        assert plural_noun(word), word
    for word in (
        "bus",
        "class",
        "news",
        "analysis",
        "famous",
        "Ann's",
        "James",
        "has",
        "its",
        "book",
    ):
        assert not plural_noun(word), word


def test_the_gate_passes_the_weight_to_set_queries_only() -> None:
    def penalty(weight: float, gate: str, text: str) -> float:
        return gated(weight, gate, asks_for_set(text))

    assert penalty(0.1, "set_query", "What books has Ann read?") == 0.1
    assert penalty(0.1, "set_query", "What did Ann read?") == 0.0
    assert penalty(0.1, "always", "What did Ann read?") == 0.1
    assert penalty(0.0, "always", "What books has Ann read?") == 0.0


NS = Namespace("chat", "ann-bob")


def _ts(d: int) -> int:
    return int(dt.datetime(2024, 5, d, 15, tzinfo=dt.UTC).timestamp() * 1000)


# one session dense with one hike (the neighbour lift carries its turns up together), two more
# sessions that each mention another hike once
SESSIONS = [
    (
        _ts(4),
        [
            ("Ann: I hiked the Ridge trail this morning.", "Bob: How was the hike?"),
            (
                "Ann: The trail was steep and muddy after the rain.",
                "Bob: Good thing you had boots.",
            ),
            ("Ann: At the top of the trail the view over the valley was great.", "Bob: Photos?"),
            ("Ann: Plenty, the hike took four hours.", "Bob: A long hike then."),
        ],
    ),
    (
        _ts(11),
        [
            ("Ann: My sister and I hiked the Coastal trail on Sunday.", "Bob: Lovely hike."),
            ("Ann: Then we had fish for dinner.", "Bob: Sounds like a good day."),
        ],
    ),
    (
        _ts(18),
        [
            ("Bob: Did you see the match yesterday?", "Ann: No, I hiked the Forest trail."),
            ("Bob: We lost again.", "Ann: Next time then."),
        ],
    ),
]
SET_Q = "What trails has Ann hiked?"
POINTED_Q = "How steep was the trail Ann hiked this morning?"


async def _ingest(home: Path) -> dict[str, str]:
    return await ingest_sessions(home, SESSIONS, NS)


async def _top3(home: Path, keys: dict[str, str], **overrides: object) -> dict[str, list[str]]:
    core = await open_local_core(home, **overrides)
    try:
        out = {}
        for text in (SET_Q, POINTED_Q):
            res = await core.search(
                RetrievalQuery(agent="chat", query=text, namespace=NS, top_k=TopK(0, 3, 0))
            )
            out[text] = [keys.get(h.ref_id, h.ref_kind) for h in res.hits]
        return out
    finally:
        await core.shutdown()


async def test_session_diversity_spreads_set_questions_only(tmp_path: Path) -> None:
    keys = await _ingest(tmp_path)
    plain = await _top3(tmp_path, keys)
    gated = await _top3(tmp_path, keys, retrieval__session_diversity=0.5)
    everywhere = await _top3(
        tmp_path, keys, retrieval__session_diversity=0.5, retrieval__session_diversity_gate="always"
    )
    sessions = {q: {k.split(".")[0] for k in hits} for q, hits in gated.items()}
    # the set question's top 3 reaches the other sessions' hikes, as it does with no gate
    assert len(sessions[SET_Q]) > len({k.split(".")[0] for k in plain[SET_Q]}), (plain, gated)
    assert gated[SET_Q] == everywhere[SET_Q]
    # the pointed question keeps its ranking (the session's turns around its match), which an
    # ungated penalty would have spread
    assert gated[POINTED_Q] == plain[POINTED_Q]
    assert everywhere[POINTED_Q] != plain[POINTED_Q], (plain, everywhere)
