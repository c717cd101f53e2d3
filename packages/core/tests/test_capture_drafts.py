"""Trace drafts: truncation, heuristic summary, tags, error signatures, embed texts, initial V/α/priority."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from stratamem.contract.dtos import Namespace, ToolCall, TurnResult
from stratamem.core.capture import (
    build_trace_drafts,
    capture_turn,
    error_signatures,
    extract_tags,
    heuristic_summary,
    truncate_middle,
)
from stratamem.core.capture.normalise import MARKER
from stratamem.core.storage.schemas import traces_schema

USER = "My Python service crashes on start after I upgraded the base image, can you look?"
AGENT = (
    "The traceback shows ModuleNotFoundError: No module named 'yaml'. The new image dropped PyYAML, "
    "so add pyyaml to requirements.txt and rebuild the docker image."
)
CALL = ToolCall(
    name="shell.exec",
    input={"cmd": "docker run svc"},
    output="Traceback...\nModuleNotFoundError: No module named 'yaml'\nexit code 1",
    error_code="E_EXIT",
)


def result(**kw: object) -> TurnResult:
    base: dict[str, object] = {
        "agent": "hermes",
        "session_id": "se_1",
        "agent_text": AGENT,
        "ts": 2_000,
        "tool_calls": (CALL,),
        "namespace": Namespace("hermes", "work"),
        "reflection": "Checked the traceback first because imports fail at start-up.",
    }
    base.update(kw)
    return TurnResult(**base)  # type: ignore[arg-type]


@given(st.text(max_size=3000), st.integers(min_value=200, max_value=2500))
def test_truncate_middle_never_exceeds_the_limit_and_keeps_short_text(
    text: str, limit: int
) -> None:
    out = truncate_middle(text, limit)
    # the text budget never drops below 200 chars (memos-core §5.2), so tiny limits may exceed by the marker
    assert len(out) <= max(limit, 200 + len(MARKER))
    if len(text) <= limit:
        assert out == text
    else:
        assert MARKER in out and text.startswith(out.split(MARKER)[0])


def test_truncate_middle_keeps_55_percent_head_and_45_percent_tail() -> None:
    out = truncate_middle("a" * 3000 + "b" * 3000, 1000)
    head, tail = out.split(MARKER)
    budget = 1000 - len(MARKER)
    assert (len(head), len(tail)) == (int(budget * 0.55), budget - int(budget * 0.55))


def test_heuristic_summary_collapses_whitespace_and_clamps_to_140() -> None:
    assert heuristic_summary("  a \n\n b  ") == "a b"
    long = heuristic_summary("word " * 100)
    assert len(long) == 140 and long.endswith("…")
    assert heuristic_summary("", "agent said") == "agent said"
    assert heuristic_summary("", "") == "(empty turn)"


def test_tags_come_from_tool_names_error_codes_and_the_dictionary() -> None:
    tags = extract_tags("docker build of the python image failed", [CALL])
    assert tags[:2] == ["shell", "e_exit"]
    assert {"docker", "python", "error"} <= set(tags)
    assert (
        len(extract_tags(" ".join(["docker git npm pip sql shell python rust http test"]), [CALL]))
        == 8
    )


def test_tags_respect_length_bounds() -> None:
    assert extract_tags("", [ToolCall("ab.x"), ToolCall("x" * 40)]) == []


def test_error_signatures_find_the_reference_shapes() -> None:
    text = (
        "ValueError: bad literal\nerror: linker failed\nbash: foo: command not found\n"
        "the field name is required here\nprocess exit code 137\nGot HTTP 503 Service Unavailable"
    )
    sigs = error_signatures(text)
    assert sigs == [
        "ValueError: bad literal",
        "error: linker failed",
        "bash: foo: command not found",
        "name is required here",
    ]
    assert len(error_signatures(text, limit=10)) == 6
    assert error_signatures("all good") == []


def test_lightweight_capture_is_one_trace_per_turn_with_the_whole_turn_embedded() -> None:
    (d,) = build_trace_drafts(USER, result(), lightweight=True, user_ts=1_000, episode_id="ep_1")
    assert (d.ts, d.turn_id, d.episode_id, d.session_id) == (2_000, 1_000, "ep_1", "se_1")
    assert (d.value, d.alpha, d.priority) == (0.0, 0.0, 0.5)
    assert d.summary == heuristic_summary(USER)
    assert d.tags[0] == "lightweight_memory"
    # the reference embedded only the user half cut to 140 chars; we embed user AND assistant
    assert USER in d.summary_text_to_embed and AGENT in d.summary_text_to_embed
    assert d.action_text_to_embed is None
    assert d.tool_calls == (CALL,)
    assert any("ModuleNotFoundError" in s for s in d.error_signatures)
    assert (d.owner_agent_kind, d.owner_profile_id) == ("hermes", "work")
    assert "pyyaml" in d.search_text.lower() and "shell.exec" in d.search_text


def test_full_capture_has_a_sub_step_per_tool_call_and_an_action_text() -> None:
    drafts = build_trace_drafts(USER, result(), lightweight=False, user_ts=1_000)
    assert len(drafts) == 2
    sub, reply = drafts
    assert sub.user_text == USER and sub.agent_text == "" and sub.tool_calls == (CALL,)
    assert reply.agent_text == AGENT and reply.reflection is not None
    assert (
        sub.action_text_to_embed is not None
        and 'shell.exec({"cmd": "docker run svc"})' in sub.action_text_to_embed
    )
    assert reply.action_text_to_embed == AGENT
    assert {d.turn_id for d in drafts} == {1_000} and sub.ts < reply.ts


def test_draft_rows_carry_every_non_vector_trace_column() -> None:
    (d,) = build_trace_drafts(USER, result(), lightweight=True)
    columns = {f.name for f in traces_schema(8)} - {
        "id",
        "journal_seq",
        "vec_summary",
        "vec_action",
    }
    assert set(d.row()) == columns


def test_long_texts_are_clamped_by_config() -> None:
    (d,) = build_trace_drafts(
        "x" * 9000,
        result(agent_text="y" * 9000, tool_calls=()),
        lightweight=True,
        config={"capture": {"max_text_chars": 500}},
    )
    assert len(d.user_text) == 500 and len(d.agent_text) == 500


def test_capture_turn_returns_facade_rows_with_embed_texts() -> None:
    draft = SimpleNamespace(
        user_text=USER,
        agent_text=AGENT,
        tool_calls=(CALL,),
        ts=2_000,
        turn_id=1_000,
        agent_thinking=None,
        reflection=None,
        lightweight=False,
    )
    rows = capture_turn(draft, None)
    assert len(rows) == 2
    assert all("episode_id" not in r and "owner_agent_kind" not in r for r in rows)
    assert set(rows[0]["_embed"]) == {"vec_summary", "vec_action"}
    lw = capture_turn(SimpleNamespace(**{**vars(draft), "lightweight": True}), None)
    assert len(lw) == 1 and set(lw[0]["_embed"]) == {"vec_summary"}
