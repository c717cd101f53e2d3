"""Tags: tool names, error codes and a small keyword dictionary (the same dictionary tags queries)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from stratamem.contract.dtos import ToolCall

MAX_TAGS = 8
MIN_LEN, MAX_LEN = 3, 32

#: tag -> pattern (word-bounded, common inflections)
KEYWORDS: dict[str, re.Pattern[str]] = {
    name: re.compile(rf"\b(?:{alts})\b", re.I)
    for name, alts in {
        "docker": r"docker\w*|dockerfile|containers?",
        "kubernetes": r"kubernetes|k8s|kubectl|helm",
        "pip": r"pip3?|pypi",
        "npm": r"npm|npx|yarn|pnpm",
        "database": r"databases?|db|postgres\w*|mysql|sqlite|mongo\w*",
        "sql": r"sql|select\s+\*|queries",
        "shell": r"shell|bash|zsh|terminal|command[- ]line",
        "git": r"git|github|gitlab|commits?|rebase",
        "python": r"python3?|pytest|\w+\.py",
        "typescript": r"typescript|tsc|\w+\.tsx?",
        "javascript": r"javascript|node(?:js)?|\w+\.js",
        "rust": r"rust|cargo|rustc",
        "plugin": r"plugins?",
        "http": r"https?|rest\s+api|endpoints?",
        "network": r"network\w*|dns|tcp|proxy|firewall",
        "auth": r"auth\w*|login|oauth|token|credentials?",
        "test": r"tests?|testing|unittest",
        "error": r"errors?|exceptions?|traceback|failed|failure",
    }.items()
}

_SPLIT = re.compile(r"[.:/_\-]")
_CODE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{2,31}$")


def keyword_tags(text: str) -> list[str]:
    """Dictionary tags found in ``text`` (in dictionary order)."""
    return [name for name, pat in KEYWORDS.items() if text and pat.search(text)]


def _ok(tag: str) -> bool:
    return MIN_LEN <= len(tag) <= MAX_LEN


def extract_tags(
    text: str, tool_calls: Sequence[ToolCall] = (), extra: Iterable[str] = ()
) -> list[str]:
    """≤8 distinct lower-case tags: tool-name first segments, error codes, dictionary keywords, extras."""
    found: list[str] = []

    def add(tag: str) -> None:
        tag = tag.strip().lower()
        if _ok(tag) and tag not in found:
            found.append(tag)

    for call in tool_calls:
        first = _SPLIT.split(call.name or "", maxsplit=1)[0]
        add(first)
        if call.error_code and _CODE.match(call.error_code):
            add(call.error_code)
    for name in keyword_tags(text):
        add(name)
    for tag in extra:
        add(tag)
    return found[:MAX_TAGS]
