"""Step extraction, normalisation and lightweight per-turn merge (memos-core §5.2)."""

from __future__ import annotations

from stratamem.contract.dtos import ToolCall
from stratamem.core.capture import EpisodeTurn, extract_steps
from stratamem.core.capture.normalise import MARKER
from stratamem.core.capture.steps import Step, merge_per_turn, normalise_steps

U, A, T = "user", "assistant", "tool"


def test_a_plain_exchange_is_one_step_with_the_user_ts_as_turn_id() -> None:
    steps = extract_steps([EpisodeTurn(U, "q", 100), EpisodeTurn(A, "a", 150)])
    assert [(s.user_text, s.agent_text, s.ts, s.turn_id) for s in steps] == [("q", "a", 150, 100)]


def test_consecutive_user_turns_join_and_assistant_texts_join() -> None:
    steps = extract_steps(
        [
            EpisodeTurn(U, "q1", 1),
            EpisodeTurn(U, "q2", 2),
            EpisodeTurn(A, "a1", 3),
            EpisodeTurn(A, "a2", 4),
        ]
    )
    assert len(steps) == 1
    assert steps[0].user_text == "q1\n---\nq2"
    assert steps[0].agent_text == "a1\n\na2"
    assert steps[0].turn_id == 1


def test_tool_turns_give_one_sub_step_per_call_plus_the_reply() -> None:
    c1, c2 = ToolCall("shell.exec", {"cmd": "ls"}, "a b"), ToolCall("fs.read", {"p": "x"}, "data")
    steps = extract_steps(
        [
            EpisodeTurn(U, "list files", 10),
            EpisodeTurn(T, ts=11, tool_call=c1),
            EpisodeTurn(T, ts=12, tool_call=c2),
            EpisodeTurn(A, "done", 13, thinking="hmm", reflection="because"),
        ]
    )
    assert [(s.user_text, s.agent_text, s.tool_calls, s.sub_step) for s in steps] == [
        ("list files", "", (c1,), True),
        ("", "", (c2,), True),
        ("", "done", (), False),
    ]
    assert {s.turn_id for s in steps} == {10}
    assert (steps[-1].thinking, steps[-1].reflection) == ("hmm", "because")


def test_a_segment_without_an_assistant_turn_yields_nothing() -> None:
    steps = extract_steps(
        [EpisodeTurn(U, "q1", 1), EpisodeTurn(A, "a1", 2), EpisodeTurn(U, "q2", 3)]
    )
    assert [s.user_text for s in steps] == ["q1"]


def test_an_episode_with_only_a_user_turn_yields_one_synthetic_step() -> None:
    steps = extract_steps([EpisodeTurn(U, "lonely question", 5)])
    assert [(s.user_text, s.agent_text, s.turn_id) for s in steps] == [("lonely question", "", 5)]


def test_equal_timestamps_are_made_strictly_increasing() -> None:
    call = ToolCall("t", 1, 2)
    steps = extract_steps(
        [
            EpisodeTurn(U, "q", 7),
            EpisodeTurn(T, ts=7, tool_call=call),
            EpisodeTurn(T, ts=7, tool_call=call),
            EpisodeTurn(A, "a", 7),
        ]
    )
    assert [s.ts for s in steps] == [7, 8, 9]  # two sub-steps + the reply


def test_normalise_clamps_texts_and_tool_outputs_head_and_tail() -> None:
    text = "H" * 5000 + "T" * 5000
    s = Step(text, "ok", 1, 1, (ToolCall("t", None, "o" * 100 + "E" * 3000),))
    (out,) = normalise_steps([s], 4000, 2000)
    assert len(out.user_text) == 4000 and MARKER in out.user_text
    assert out.user_text.startswith("H") and out.user_text.endswith("T")
    assert len(str(out.tool_calls[0].output)) == 2000 and str(out.tool_calls[0].output).endswith(
        "E"
    )


def test_normalise_drops_empty_steps_and_consecutive_duplicates_but_keeps_sub_steps() -> None:
    a = Step("q", "a", 1, 1)
    call = ToolCall("t")
    sub = Step("", "", 2, 1, (call,), sub_step=True)
    out = normalise_steps([a, a, Step("", "  ", 3, 1), sub, sub], 4000, 2000)
    assert out == [a, sub, sub]


def test_lightweight_merge_makes_one_step_per_turn_id() -> None:
    c = ToolCall("t")
    steps = [
        Step("q", "", 10, 10, (c,), sub_step=True),
        Step("", "first", 11, 10),
        Step("", "second", 12, 10, reflection="r"),
        Step("q2", "b", 20, 20),
    ]
    merged = merge_per_turn(steps)
    assert [
        (m.user_text, m.agent_text, m.ts, m.turn_id, m.tool_calls, m.reflection) for m in merged
    ] == [
        ("q", "first\n\nsecond", 12, 10, (c,), "r"),
        ("q2", "b", 20, 20, (), None),
    ]
