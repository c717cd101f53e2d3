"""One ``<memos_context>`` renderer for every host: capped, never unterminated, never below 256."""

from __future__ import annotations

import pytest

from stratamem.contract.hostkit.context_block import (
    CLOSE_TAG,
    MAX_CONTEXT_CHARS,
    MIN_CONTEXT_CHARS,
    render_context_block,
)


def test_wraps_and_skips_empty() -> None:
    assert render_context_block("  \n ") == ""
    assert render_context_block(" a fact\n") == "<memos_context>\na fact\n</memos_context>"


def test_a_block_that_fits_exactly_is_not_cut() -> None:
    body = "y" * (MAX_CONTEXT_CHARS - len("<memos_context>\n\n</memos_context>"))
    exact = render_context_block(body)
    assert len(exact) == MAX_CONTEXT_CHARS and "truncated" not in exact


@pytest.mark.parametrize("cap", [None, 0, 10, 256, 300, 1000, 6000, 9000])
def test_a_cut_block_keeps_its_closing_tag_and_stays_within_the_cap(cap: int | None) -> None:
    block = render_context_block("x" * 20_000, cap)
    limit = max(MIN_CONTEXT_CHARS, cap or MAX_CONTEXT_CHARS)
    assert len(block) <= limit
    assert block.startswith("<memos_context>\nxxx")
    assert block.endswith(f"[Memory context truncated to {limit} characters.]\n{CLOSE_TAG}")
