"""Intent classifier, query profile and injection scheduler (memos-core §5.1.2, §5.7.1)."""

from __future__ import annotations

import pytest

from stratamem.core.routing import (
    Intent,
    Relation,
    classify_intent,
    query_profile,
    schedule_injection,
)


@pytest.mark.parametrize(
    ("text", "kind", "conf"),
    [
        ("", "chitchat", 0.9),
        ("/memos status", "meta", 0.98),
        ("/memory forget all", "meta", 0.98),
        ("hi!", "chitchat", 0.9),
        ("thanks so much", "chitchat", 0.9),
        ("你好", "chitchat", 0.9),
        ("do you remember what my sister does?", "memory_probe", 0.88),
        ("what did we decide about the schema last week", "memory_probe", 0.88),
        ("你还记得我的生日吗", "memory_probe", 0.88),
        ("fix the flaky login test", "task", 0.75),
        ("please summarise this", "task", 0.75),
        ("帮我写一个脚本", "task", 0.75),
        ("the " * 40 + "end", "task", 0.6),
        ("the sky looks odd today", "unknown", 0.4),
    ],
)
def test_intent_rules(text: str, kind: str, conf: float) -> None:
    got = classify_intent(text)
    assert (got.kind, got.confidence) == (kind, conf)


def test_a_greeting_with_a_real_request_is_not_chitchat() -> None:
    assert classify_intent("hi, can you fix my docker build").kind != "chitchat"


def test_intent_tiers() -> None:
    assert classify_intent("fix the build").tiers == (1, 2, 3)
    assert classify_intent("do you remember my dog").tiers == (1, 2)
    assert classify_intent("hello").tiers == ()
    assert classify_intent("odd weather").tiers == (1, 2, 3)


@pytest.mark.parametrize(
    ("text", "profile"),
    [
        ("what is my favorite color?", "personal_fact"),
        ("where do I live again", "personal_fact"),
        ("my favourite band", "personal_fact"),
        ("我最喜欢的颜色是什么", "personal_fact"),
        ("how do I fix my docker install", "default"),
        ("我怎么配置代理", "default"),
        ("what is the capital of France", "default"),
    ],
)
def test_query_profile(text: str, profile: str) -> None:
    assert query_profile(text) == profile


def test_scheduler_skips_confident_chitchat_and_meta() -> None:
    assert schedule_injection(classify_intent("hello")).skip
    assert schedule_injection(classify_intent("/memo help")).reason == "META"


def test_scheduler_unsure_chitchat_retrieves_everything() -> None:
    inj = schedule_injection(Intent("chitchat", 0.5, ()))
    assert (inj.skip, inj.tiers, inj.reason) == (False, (1, 2, 3), "UNKNOWN_SAFE")


def test_scheduler_personal_memory_probe_reads_traces_only() -> None:
    probe = classify_intent("do you remember my favorite color")
    assert schedule_injection(probe, None, "personal_fact").tiers == (2,)
    assert schedule_injection(probe, None, "default").tiers == (1, 2)


def test_scheduler_uses_relation_then_intent() -> None:
    task = classify_intent("fix the build")
    assert schedule_injection(task, Relation("new_task", 0.9, "x")).reason == "NEW_TASK"
    assert schedule_injection(task, Relation("revision", 0.9, "x")).reason == "FOLLOW_UP"
    assert schedule_injection(task).reason == "TASK"
    assert schedule_injection(classify_intent("odd weather")).reason == "UNKNOWN_SAFE"
