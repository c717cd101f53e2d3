"""Mirror Hermes' built-in ``memory`` tool into Stratamem workspace memory rooted at ``$HERMES_HOME``.

Target ``memory`` → a bullet in ``MEMORY.md``; target ``user`` → a recall record of kind ``preference``.
``replace``/``remove`` act on the entry matching ``metadata["old_text"]`` (as Hermes' tool matches it).
The files and the recall store are the home's service's (a ``RemoteWorkspace`` on the provider's
connection); only Hermes' matching rule lives here, over the host kit's normalisation.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.recall_text import normalize_recall_content

log = logging.getLogger("stratamem.hermes")

ACTIONS = ("add", "replace", "remove")
TARGETS = ("memory", "user")
USER_KIND = "preference"
USER_TAGS = ("hermes", "user")
_lock = threading.Lock()


def _entries(text: str) -> list[str]:
    return text.splitlines()


def _bullet(content: str) -> str:
    return "- " + " ".join(content.split())


def _matches(line: str, old: str) -> bool:
    old = " ".join(old.split())
    return bool(old) and old in " ".join(line.split())


def apply_to_memory_md(text: str, action: str, content: str, old_text: str) -> str:
    """The new ``MEMORY.md`` text after one add/replace/remove (pure, for testing too)."""
    lines = _entries(text)
    if action == "add":
        if any(" ".join(line.split()) == _bullet(content) for line in lines):
            return text
        body = text if text.endswith("\n") or not text else text + "\n"
        return body + _bullet(content) + "\n"
    idx = next((i for i, line in enumerate(lines) if _matches(line, old_text)), None)
    if idx is None:
        raise StratamemError(
            ErrorCode.NOT_FOUND, "no MEMORY.md entry matches old_text", {"old_text": old_text}
        )
    if action == "replace":
        lines[idx] = _bullet(content)
    else:
        del lines[idx]
    return "\n".join(lines) + ("\n" if lines else "")


def old_text_of(action: str, content: str, meta: dict[str, Any]) -> str:
    """The text naming the entry to change (a ``remove`` may name it in ``content``)."""
    old_text = str(meta.get("old_text") or "")
    if action == "remove" and not old_text:
        old_text = content or ""
    return old_text


def validate(action: str, target: str, content: str, old_text: str) -> None:
    if action not in ACTIONS:
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, f"unknown memory action {action!r}")
    if target not in TARGETS:
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, f"unknown memory target {target!r}")
    if action in ("add", "replace") and not (content or "").strip():
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, f"{action} needs content")
    if action in ("replace", "remove") and not (old_text or "").strip():
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, f"{action} needs old_text")


def mirror_memory_write(
    ws: Any,
    hermes_home: Path,
    namespace: Namespace,
    action: str,
    target: str,
    content: str,
    metadata: dict[str, Any] | None,
) -> None:
    """Apply one built-in memory write through ``ws`` (a blocking ``RemoteWorkspace`` that opens
    its roots); bad input raises ``StratamemError`` and changes nothing."""
    meta = dict(metadata or {})
    old_text = old_text_of(action, content, meta)
    validate(action, target, content, old_text)
    root = hermes_home.resolve()
    with _lock:
        if target == "memory":
            current = ws.read(root)
            new = apply_to_memory_md(
                current.content if current.exists else "", action, content, old_text
            )
            if new != (current.content if current.exists else ""):
                ws.write(root, new)
            return
        source = {
            "agent_id": namespace.profile_id,
            "session_id": str(meta.get("session_id") or namespace.session_key or "") or None,
            "origin": "hermes.memory_tool",
        }
        if action == "add":
            ws.append_recall(root, USER_KIND, content, tags=USER_TAGS, source=source)
            return
        entry = user_entry(ws, root, old_text)
        if entry is None and action == "remove":
            raise StratamemError(
                ErrorCode.NOT_FOUND, "no user preference matches old_text", {"old_text": old_text}
            )
        if entry is None:  # an entry from before the mirror existed: the new text still lands
            log.info("stratamem: no user preference matches %r; adding the new one", old_text)
            ws.append_recall(root, USER_KIND, content, tags=USER_TAGS, source=source)
        elif action == "replace":
            ws.replace_recall(root, USER_KIND, entry.id, content, source=source)
        else:
            ws.remove_recall(root, USER_KIND, entry.id)


def user_entry(ws: Any, root: Path, old_text: str) -> Any:
    """The mirrored ``user`` entry ``old_text`` identifies, as Hermes' own tool matches it: the
    exact (normalised) entry, else the one entry containing it; ``conflict`` if several do."""
    records = ws.list_recall(root, [USER_KIND], tags=list(USER_TAGS))
    wanted = normalize_recall_content(old_text)
    exact = [r for r in records if normalize_recall_content(r.content) == wanted]
    if exact:
        return exact[0]
    needle = " ".join(old_text.split()).lower()
    found = [r for r in records if needle in " ".join(r.content.split()).lower()]
    if len(found) > 1:
        raise StratamemError(
            ErrorCode.CONFLICT,
            "old_text matches several user preferences",
            {"old_text": old_text, "ids": [r.id for r in found]},
        )
    return found[0] if found else None
