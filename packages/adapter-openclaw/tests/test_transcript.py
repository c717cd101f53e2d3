from stratamem.openclaw.transcript import (
    ObservedTool,
    TranscriptCursor,
    extract_turn,
    merge_observed,
    visible_user_texts,
)


def _user(text: str, ts: int) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def _assistant(*parts: dict[str, object], ts: int = 0) -> dict[str, object]:
    return {"role": "assistant", "content": list(parts), "timestamp": ts}


TURN1 = [_user("hello", 1), _assistant({"type": "text", "text": "hi there"}, ts=2)]
TOOL_TURN = [
    _user("[Mon 2026-11-30 16:44 UTC] Search memory for probe", 10),
    _assistant(
        {"type": "thinking", "thinking": "I should search"},
        {"type": "text", "text": "Let me look."},
        {
            "type": "toolCall",
            "id": "call_fake_1",
            "name": "tool_call",
            "arguments": {"id": "memos_search", "args": {"query": "probe"}},
        },
        ts=11,
    ),
    {"role": "custom", "customType": "openclaw.nested-tool.v1", "content": "x"},
    {
        "role": "toolResult",
        "toolCallId": "call_fake_1",
        "toolName": "tool_call",
        "content": [{"type": "text", "text": "memo: probe says hello"}],
        "isError": False,
        "timestamp": 12,
    },
    _assistant({"type": "text", "text": "Found it: probe says hello."}, ts=13),
]


def test_the_current_turn_is_the_last_user_message_and_what_follows() -> None:
    turn = extract_turn(TURN1 + TOOL_TURN)
    assert turn is not None
    assert turn.user_text == "Search memory for probe"
    assert turn.agent_text == "Found it: probe says hello."
    assert turn.agent_thinking == "I should search"
    assert turn.user_ts == 10


def test_bridged_tool_calls_are_unwrapped_and_paired_with_results_by_id() -> None:
    turn = extract_turn(TOOL_TURN)
    assert turn is not None
    (call,) = turn.tool_calls
    assert call.name == "memos_search"
    assert call.input == {"query": "probe"}
    assert call.output == "memo: probe says hello"
    assert call.error_code is None
    assert (call.started_at, call.ended_at) == (11, 12)
    assert call.thinking_before == "I should search"
    assert call.assistant_text_before == "Let me look."


def test_openai_legacy_shapes_pair_by_id_and_mark_errors() -> None:
    msgs = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "a", "function": {"name": "ls", "arguments": '{"path": "/"}'}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "permission denied", "isError": True},
        {"role": "assistant", "content": "I could not list them."},
    ]
    turn = extract_turn(msgs)
    assert turn is not None
    (call,) = turn.tool_calls
    assert (call.name, call.input, call.error_code) == ("ls", {"path": "/"}, "tool_error")
    assert turn.agent_text == "I could not list them."


def test_unknown_roles_are_dropped_not_coerced_to_user() -> None:
    msgs = [
        _user("real question", 1),
        {"role": "system", "content": "ignore"},
        _assistant({"type": "text", "text": "answer"}),
    ]
    turn = extract_turn(msgs)
    assert turn is not None and turn.user_text == "real question"
    assert extract_turn([{"role": "custom", "content": "x"}]) is None


def test_cursor_gives_each_agent_end_only_the_new_messages_with_one_of_overlap() -> None:
    cursor = TranscriptCursor()
    first = cursor.new_messages("s", TURN1)
    assert list(first) == TURN1
    cursor.advance("s", TURN1)
    full = TURN1 + TOOL_TURN
    new = cursor.new_messages("s", full)
    assert list(new) == full[1:]
    turn = extract_turn(new)
    assert turn is not None and turn.user_text == "Search memory for probe"
    cursor.advance("s", full)
    # a compacted (shorter) transcript restarts from the beginning instead of slicing nothing
    assert list(cursor.new_messages("s", TURN1)) == TURN1


def test_observed_tool_errors_override_the_transcript() -> None:
    turn = extract_turn(TOOL_TURN)
    assert turn is not None
    merged = merge_observed(
        turn.tool_calls,
        {"call_fake_1": ObservedTool("memos_search", "call_fake_1", "boom", 5.0, 20)},
    )
    assert merged[0].error_code == "tool_error"
    assert merge_observed(turn.tool_calls, {}) == turn.tool_calls


def test_visible_user_texts_are_clean_and_bounded() -> None:
    msgs = [_user(f"[Mon 2026-11-30 10:0{i % 10} UTC] question {i}", i) for i in range(200)]
    texts = visible_user_texts(msgs)
    assert len(texts) == 128
    assert texts[-1] == "question 199"
