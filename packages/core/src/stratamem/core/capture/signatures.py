"""Error signatures: short deterministic fragments that identify a failure across turns (≤4 per text)."""

from __future__ import annotations

import re

MAX_SIGNATURES = 4
MIN_LEN, MAX_LEN = 6, 160

_PATTERNS = [
    re.compile(r"\b[A-Z][A-Za-z0-9_]*(?:Error|Exception)\b(?::[^\n]*)?"),
    re.compile(r"\b(?:error|fatal):[^\n]*", re.I),
    re.compile(
        r"\b[\w./-]+:[^\n]*?(?:not found|no such file(?: or directory)?|permission denied"
        r"|undefined reference[^\n]*|command not found)",
        re.I,
    ),
    re.compile(r"\b[\w.-]+ (?:is required|must be|cannot|could not|failed to)\b[^\n]*", re.I),
    re.compile(r"\bexit(?:ed with)? code:? ?-?\d+", re.I),
    re.compile(r"\bHTTP(?:/\d(?:\.\d)?)? ?[45]\d\d\b(?: [A-Z][A-Za-z ]{2,40})?"),
]


def error_signatures(text: str, limit: int = MAX_SIGNATURES) -> list[str]:
    """Distinct fragments (6–160 chars, whitespace collapsed) in pattern order, at most ``limit``."""
    out: list[str] = []
    if not text:
        return out
    for pattern in _PATTERNS:
        for m in pattern.finditer(text):
            frag = " ".join(m.group(0).split()).strip(" .,;")
            if len(frag) > MAX_LEN:
                frag = frag[:MAX_LEN].rstrip()
            if len(frag) < MIN_LEN or any(frag in o or o in frag for o in out):
                continue
            out.append(frag)
            if len(out) >= limit:
                return out
    return out
