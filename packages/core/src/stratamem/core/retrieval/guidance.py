"""Decision guidance: ≤3 "prefer" and ≤3 "avoid" lines distilled from skills and policies, deduplicated."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

MAX_LINES = 3


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def collect_guidance(
    rows: Sequence[Mapping[str, Any]], max_lines: int = MAX_LINES
) -> tuple[list[str], list[str]]:
    """Lines of each row's ``guidance_json`` in row order; duplicates (case/space-insensitive) dropped."""
    prefer: list[str] = []
    avoid: list[str] = []
    for row in rows:
        try:
            g = json.loads(row.get("guidance_json") or "{}")
        except ValueError:
            continue
        if not isinstance(g, dict):
            continue
        for src, dst in (
            (g.get("preference"), prefer),
            (g.get("anti_pattern") or g.get("antiPattern"), avoid),
        ):
            for line in src or ():
                norm = _norm(str(line))
                if norm and len(dst) < max_lines and all(_norm(x) != norm for x in dst):
                    dst.append(str(line).strip())
    return prefer, avoid
