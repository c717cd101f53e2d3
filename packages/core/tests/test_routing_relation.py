"""Relation classifier: each rule of memos-core §5.1.1 and their precedence."""

from __future__ import annotations

import pytest

from stratamem.core.routing import classify_relation
from stratamem.core.routing.relation import heuristic_relations

PREV_USER = "Set up a Postgres database for the billing service"
PREV_ASSISTANT = (
    "I created the billing database with a dedicated role and enabled point in time recovery "
    "using continuous archiving to the backup bucket."
)


def rel(
    text: str, gap_ms: int | None = 60_000, prev_user: str = PREV_USER
) -> tuple[str, float, str]:
    r = classify_relation(text, prev_user, PREV_ASSISTANT, gap_ms)
    return r.kind, r.confidence, r.reason


def test_empty_text_is_unknown_with_zero_confidence() -> None:
    assert rel("   ")[:2] == ("unknown", 0.0)


def test_first_message_of_a_topic_is_a_bootstrap_new_task() -> None:
    assert rel("hello there", prev_user="") == ("new_task", 0.75, "bootstrap")


def test_gap_over_two_hours_is_a_new_task_before_any_rule() -> None:
    assert rel("wrong, redo it", gap_ms=2 * 3_600_000 + 1)[:2] == ("new_task", 0.9)


@pytest.mark.parametrize(
    "text",
    [
        "wrong, use MySQL instead",
        "Incorrect.",
        "not quite what I wanted",
        "no, that's wrong",
        "redo it",
        "try again please",
        "不对，重新来",
        "重做一下",
    ],
)
def test_r1_negation_at_the_start_is_a_revision(text: str) -> None:
    assert rel(text)[:2] == ("revision", 0.85)


def test_r1_negation_in_the_middle_does_not_fire() -> None:
    assert rel("the tests show the output was wrong yesterday")[0] != "revision"


def test_r2_quoting_eight_words_of_the_previous_answer_is_a_weak_revision() -> None:
    text = "about enabled point in time recovery using continuous archiving to the backup — is that needed?"
    kind, conf, reason = rel(text)
    assert (kind, conf) == ("revision", 0.75)
    assert "llm_skipped" in reason  # weak heuristic used because no LLM is configured


def test_r3_short_deictic_chinese_follow_up() -> None:
    assert rel("那备份保留多久？")[:2] == ("follow_up", 0.85)


def test_r3_does_not_fire_on_long_messages() -> None:
    assert rel("那" + "这是一个非常长的消息" * 10)[1] < 0.85


@pytest.mark.parametrize(
    "text",
    [
        "also add an index on email",
        "then create a read replica",
        "another one for the auth service",
        "再帮我做一个",
    ],
)
def test_r4_follow_phrases_are_follow_ups(text: str) -> None:
    assert rel(text)[:2] == ("follow_up", 0.8)


@pytest.mark.parametrize(
    "text",
    [
        "New task: write a haiku",
        "let's change the topic to cooking",
        "moving on, what's 2+2",
        "forget about it",
        "换个话题吧",
        "先放下这个",
    ],
)
def test_r5_new_topic_phrases_are_new_tasks(text: str) -> None:
    assert rel(text)[:2] == ("new_task", 0.85)


def test_r5_beats_r4_on_equal_footing_next_task() -> None:
    assert rel("next task: summarise the logs")[0] == "new_task"


def test_r6_idle_gap_over_thirty_minutes_is_a_weak_new_task() -> None:
    assert rel("how many replicas", gap_ms=31 * 60_000)[:2] == ("new_task", 0.6)


def test_r7_no_tag_overlap_only_fires_when_tags_are_given() -> None:
    assert not heuristic_relations("x", PREV_USER, PREV_ASSISTANT, 1000)
    fired = heuristic_relations("x", PREV_USER, PREV_ASSISTANT, 1000, ["database"], ["docker"])
    assert [(r.kind, r.confidence) for r in fired] == [("new_task", 0.55)]


def test_nothing_fired_defaults_to_follow_up_half_confidence() -> None:
    assert rel("how many replicas should it have")[:2] == ("follow_up", 0.5)


def test_rules_sort_by_confidence_then_priority() -> None:
    fired = heuristic_relations("wrong, new task: cook pasta", PREV_USER, PREV_ASSISTANT, 1000)
    assert [r.reason for r in fired][:2] == ["r5_new_topic_phrase", "r1_negation"]
