"""The generated long-memory set is deterministic and well formed."""

from __future__ import annotations

import datetime as dt
import itertools

from bench.longmem import KINDS, conversation_stream, generate


def test_same_seed_gives_the_same_set() -> None:
    a = generate(seed=11, personas=2, sessions_per_persona=10, questions_per_kind=2)
    b = generate(seed=11, personas=2, sessions_per_persona=10, questions_per_kind=2)
    assert a.as_dict() == b.as_dict()
    assert a.fingerprint() == b.fingerprint()


def test_another_seed_gives_another_set() -> None:
    a = generate(seed=11, personas=2, sessions_per_persona=10, questions_per_kind=2)
    b = generate(seed=12, personas=2, sessions_per_persona=10, questions_per_kind=2)
    assert a.fingerprint() != b.fingerprint()


def test_every_kind_is_asked_per_persona() -> None:
    data = generate(seed=3, personas=3, sessions_per_persona=12, questions_per_kind=2)
    for p in data.personas:
        kinds = [q.kind for q in data.questions if q.persona == p.id]
        assert sorted(set(kinds)) == sorted(KINDS)
        assert all(kinds.count(k) == 2 for k in KINDS)


def test_gold_evidence_points_at_turns_of_the_same_persona_that_state_the_answer() -> None:
    data = generate(seed=5, personas=2, sessions_per_persona=12, questions_per_kind=3)
    turns = {t.key: (s, t) for s, t in data.turns()}
    for q in data.questions:
        if q.kind == "abstention":
            assert q.gold == ()
            continue
        assert q.gold, q
        for key in q.gold:
            sess, _turn = turns[key]
            assert sess.persona == q.persona
        texts = " ".join(turns[k][1].user for k in q.gold)
        if q.kind == "single_session":
            assert len(q.gold) == 1 and q.answer.split()[-1] in texts
        if q.kind == "multi_session":
            assert len({turns[k][0].id for k in q.gold}) == 3  # three different sessions
            for item in q.answer.split(": ", 1)[1].split(", "):
                assert item in texts
        if q.kind == "knowledge_update":
            assert len(q.gold) == 1 and q.answer.split()[-1] in texts  # the later value wins


def test_temporal_answers_are_the_gap_between_the_evidence_sessions() -> None:
    data = generate(seed=9, personas=2, sessions_per_persona=14, questions_per_kind=2)
    turns = {t.key: s for s, t in data.turns()}
    for q in (q for q in data.questions if q.kind == "temporal"):
        first, second = sorted((turns[k] for k in q.gold), key=lambda s: s.date)
        gap = (dt.date.fromisoformat(second.date) - dt.date.fromisoformat(first.date)).days
        assert q.answer == f"{gap} days" and gap > 0


def test_sessions_are_dated_in_order_and_turn_times_increase() -> None:
    data = generate(seed=1, personas=1, sessions_per_persona=15, questions_per_kind=2)
    dates = [s.date for s in data.sessions]
    assert dates == sorted(dates)
    for s in data.sessions:
        assert all(a.ts < b.ts for a, b in itertools.pairwise(s.turns))
    asked = {q.ts for q in data.questions}
    assert min(asked) > max(t.ts for _s, t in data.turns())


def test_conversation_stream_is_deterministic_and_unique() -> None:
    a = conversation_stream(4, 50)
    assert a == conversation_stream(4, 50)
    assert len({u for _s, u, _a in a}) == 50
    assert a != conversation_stream(5, 50)


def test_dated_questions_name_the_day_of_the_gold_turn_among_look_alikes() -> None:
    import re

    data = generate(seed=9, personas=2, sessions_per_persona=14, questions_per_kind=3)
    sessions = {t.key: s for s, t in data.turns()}
    for q in (q for q in data.questions if q.kind == "dated"):
        assert len(q.gold) == 1
        day = dt.date.fromisoformat(sessions[q.gold[0]].date)
        named = {f"{day:%B} {day.day}, {day.year}", f"{day.day} {day:%B} {day.year}"}
        assert any(n in q.text for n in named), (q.text, day)
        # the same event, other values, on other days: only the date decides
        template = re.sub(r"\bon .*\?$", "", q.text)
        assert template and q.answer


def test_knowledge_update_traps_are_older_and_echo_the_question() -> None:
    data = generate(seed=4, personas=3, sessions_per_persona=12, questions_per_kind=4)
    turns = {t.key: t for _s, t in data.turns()}
    stop = {"what", "which", "where", "when", "is", "do", "i", "my", "the", "at", "and", "now"}
    for q in (q for q in data.questions if q.kind == "knowledge_update"):
        assert len(q.trap) == 1 and len(q.gold) == 1
        trap, gold = turns[q.trap[0]], turns[q.gold[0]]
        assert trap.ts < gold.ts
        words = {w.strip("?,.").lower() for w in q.text.split()} - stop
        assert words & {w.strip("?,.:").lower() for w in trap.user.split()}, (q.text, trap.user)
