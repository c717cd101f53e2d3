"""One-line trace summaries (≤140 chars): an optional LLM, else the whitespace-collapsed user text."""

from __future__ import annotations

import json
import re

from stratamem.core.routing.llm_json import CompletionLLM, complete_text

SUMMARY_MAX = 140
_WS = re.compile(r"\s+")


def clamp_line(text: str, max_chars: int = SUMMARY_MAX) -> str:
    """Whitespace collapsed; longer lines cut to ``max_chars`` ending in an ellipsis."""
    line = _WS.sub(" ", text or "").strip()
    return line if len(line) <= max_chars else line[: max_chars - 1].rstrip() + "…"


def heuristic_summary(user_text: str, agent_text: str = "", max_chars: int = SUMMARY_MAX) -> str:
    """User text, else agent text, else ``(empty turn)``, clamped."""
    for text in (user_text, agent_text):
        if text and text.strip():
            return clamp_line(text, max_chars)
    return "(empty turn)"


async def summarise(
    user_text: str,
    agent_text: str,
    *,
    llm: CompletionLLM | None = None,
    timeout_s: float = 8.0,
    max_chars: int = SUMMARY_MAX,
) -> str:
    """LLM JSON ``{summary}`` (input ≤3500 chars) when available; any failure → heuristic."""
    if llm is not None:
        prompt = (
            'Summarise this agent turn in one line of at most 100 characters. Answer JSON {"summary": "..."}.\n'
            + f"USER: {user_text}\nASSISTANT: {agent_text}"[:3500]
        )
        try:
            raw = await complete_text(llm, prompt, timeout_s=timeout_s)
            m = re.search(r"\{.*\}", raw or "", re.S)
            value = json.loads(m.group(0)).get("summary") if m else None
            if isinstance(value, str) and value.strip():
                return clamp_line(value, max_chars)
        except Exception:
            pass
    return heuristic_summary(user_text, agent_text, max_chars)
