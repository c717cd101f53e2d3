"""Reflections of a step (memos-core §5.2): adapter-given, else extracted by regex from the reply.

The no-LLM α follows: a reflection text is worth α 0.5, none is α 0.
"""

from __future__ import annotations

import re

MAX_CHARS = 1500
MIN_BODY = 10

_PATTERNS = [
    re.compile(r"<reflection>(.*?)</reflection>", re.S | re.I),
    re.compile(
        r"^#{1,6}\s*(?:reasoning|rationale|why|思考过程|我的理由)\s*:?\s*\n(.*?)(?=^#{1,6}\s|\Z)",
        re.S | re.I | re.M,
    ),
    re.compile(
        r"^(?:reflection|reasoning|rationale)\s*:\s*(.{20,}?)(?=\n\s*\n|\Z)", re.S | re.I | re.M
    ),
    re.compile(r"(我这样做的原因.{10,}?)(?=\n\s*\n|\Z)", re.S),
    re.compile(r"思考过程[:：]?\s*(.{10,}?)(?=\n\s*\n|\Z)", re.S),
]


def extract_reflection(agent_text: str) -> str | None:
    for pat in _PATTERNS:
        m = pat.search(agent_text or "")
        if m:
            body = m.group(1).strip()
            if len(body) >= MIN_BODY:
                return body[:MAX_CHARS]
    return None


def fallback_alpha(reflection: str | None) -> float:
    return 0.5 if reflection and reflection.strip() else 0.0


_TAUTOLOGY = re.compile(
    r"^\s*(?:i did (?:it|this)|because i (?:had|needed) to|it was (?:needed|required))\W*$", re.I
)


def judged_alpha(alpha: float, usable: bool, reflection: str | None) -> float:
    """LLM-judged α clamped to [0, 1]; unusable (α < 0.4, or a tautology) counts as 0."""
    a = 0.0 if alpha != alpha else max(0.0, min(1.0, float(alpha)))
    if not usable or a < 0.4 or (reflection is not None and _TAUTOLOGY.match(reflection)):
        return 0.0
    return a
