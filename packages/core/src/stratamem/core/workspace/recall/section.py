"""The ``### Recalled Context`` prompt section, capped at 800 UTF-8 bytes in total.

The budget counts separator, heading, every line and the trailing newline; the prompt before the
section is never touched.
"""

from __future__ import annotations

from collections.abc import Iterable

from stratamem.core.workspace.recall.models import RecallRecord

RECALLED_CONTEXT_HEADING = "### Recalled Context"
RECALLED_CONTEXT_MAX_BYTES = 800
SECTION_SEPARATOR = "\n\n"
_ELLIPSIS = "…"


def _line(item: RecallRecord | str) -> str:
    text = f"- ({item.kind}) {item.content}" if isinstance(item, RecallRecord) else f"- {item}"
    return " ".join(text.split())


def build_recalled_context_section(
    items: Iterable[RecallRecord | str], max_bytes: int = RECALLED_CONTEXT_MAX_BYTES
) -> str:
    """Separator + heading + as many lines as fit (the last one may be cut at a character
    boundary with an ellipsis); ``""`` when not even one line fits."""
    head = f"{SECTION_SEPARATOR}{RECALLED_CONTEXT_HEADING}\n"
    used = len(head.encode("utf-8"))
    lines: list[str] = []
    for item in items:
        line = _line(item)
        if line in ("-", "- "):
            continue
        encoded = (line + "\n").encode("utf-8")
        room = max_bytes - used
        if len(encoded) <= room:
            lines.append(line)
            used += len(encoded)
            continue
        tail = (_ELLIPSIS + "\n").encode("utf-8")
        cut = encoded[: max(0, room - len(tail))].decode("utf-8", errors="ignore").rstrip()
        if len(cut) > 2:  # more than the bare "- " marker
            lines.append(cut + _ELLIPSIS)
        break
    if not lines:
        return ""
    return head + "".join(f"{line}\n" for line in lines)


def append_recalled_context(
    prompt: str,
    items: Iterable[RecallRecord | str],
    max_bytes: int = RECALLED_CONTEXT_MAX_BYTES,
) -> str:
    """``prompt`` followed by the capped section; the prompt itself is never shortened."""
    return prompt + build_recalled_context_section(items, max_bytes)
