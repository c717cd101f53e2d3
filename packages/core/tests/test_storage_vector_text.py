"""storage.vector_text: the one definition of what each vector column embeds, below capture."""

from __future__ import annotations

import subprocess
import sys

from stratamem.contract.dtos import ToolCall, TurnResult
from stratamem.core.capture import build_trace_drafts
from stratamem.core.storage.vector_text import (
    EMBED_HALF_CHARS,
    MARKER,
    action_text,
    embed_text,
    turn_text,
)


def test_capture_and_reembed_embed_the_same_text() -> None:
    call = ToolCall(name="grep", input={"q": "x" * 500}, output="3 hits")
    result = TurnResult(
        agent="hermes", session_id="s", agent_text="found it", ts=1, tool_calls=(call,)
    )
    drafts = build_trace_drafts("where is x?", result, lightweight=False)
    assert any(d.action_text_to_embed and "grep(" in d.action_text_to_embed for d in drafts)
    for draft in drafts:
        row = draft.row()
        assert embed_text("traces", "vec_summary", row) == draft.summary_text_to_embed
        assert embed_text("traces", "vec_action", row) == draft.action_text_to_embed


def test_long_sides_are_clamped_and_calls_shortened() -> None:
    text = turn_text("u" * (3 * EMBED_HALF_CHARS), "a")
    assert MARKER in text and len(text) < 2 * EMBED_HALF_CHARS
    act = action_text("did", [ToolCall(name="t", input="y" * 1000)])
    assert act.startswith("did\n---\nt(") and act.endswith("…)")
    assert (
        embed_text("skills", "vec", {"name": "deploy", "invocation_guide": "run it"})
        == "deploy\nrun it"
    )
    assert embed_text("nope", "vec", {}) is None


def test_reembed_does_not_import_capture() -> None:
    code = (
        "import sys, stratamem.core.storage.reembed\n"
        "assert not [m for m in sys.modules if m.startswith('stratamem.core.capture')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
