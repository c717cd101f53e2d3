"""The triviality gate before reward (memos-core §5.3): greetings and empty exchanges are not scored."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from stratamem.core.config.settings import Section

_TRIVIAL_LINE = re.compile(
    r"^\s*(?:hi|hello|hey|yo|test(?:ing)?|ok(?:ay)?|k|thanks?|thank you|thx|bye|good (?:morning|night)|"
    r"你好|谢谢|好的|嗯|哈喽)\s*[.!?。！？]*\s*$|^[\s\W_]+$",
    re.I,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _trivial_text(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return True
    trivial = [ln for ln in lines if _TRIVIAL_LINE.match(ln)]
    rest = sum(len(ln.strip()) for ln in lines if not _TRIVIAL_LINE.match(ln))
    if rest >= 30:
        return False
    return len(trivial) / len(lines) > 0.7 or rest == 0


def skip_reason(turns: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any]) -> str | None:
    """Why an episode is too trivial to score (``None`` = score it). ``turns``: role/content dicts."""
    users = [str(t["content"]) for t in turns if t["role"] == "user"]
    assistants = [str(t["content"]) for t in turns if t["role"] == "assistant"]
    tools = [t for t in turns if t["role"] == "tool"]
    if not users:
        return "no_user_turns"
    cfg = Section("reward", cfg)
    if min(len(users), len(assistants)) < cfg.get_int("min_exchanges_for_completion"):
        return "too_few_exchanges"
    text = "\n".join(users + assistants)
    min_chars = cfg.get_int("min_content_chars_for_completion")
    if not _CJK.search(text):
        min_chars *= 2
    if len(text.strip()) < min_chars:
        return "too_little_content"
    if all(_trivial_text(u) for u in users):
        return "trivial_user_text"
    asst_chars = sum(len(a) for a in assistants)
    if (
        len(tools) >= cfg.get_float("tool_heavy_ratio") * len(turns)
        and len(users) <= 1
        and asst_chars < cfg.get_int("min_assistant_chars_for_tool_heavy")
    ):
        return "tool_heavy"
    if len(users) >= 3 and len({" ".join(u.lower().split()) for u in users}) / len(users) < 0.4:
        return "repetitive"
    return None
