"""Mirror Hermes' built-in ``memory`` tool into Stratamem workspace memory rooted at ``$HERMES_HOME``.

Target ``memory`` → a bullet in ``MEMORY.md``; target ``user`` → a recall record of kind ``preference``.
``replace``/``remove`` act on the entry matching ``metadata["old_text"]``.
"""

from __future__ import annotations

import functools
import logging
import threading
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import ErrorCode, StratamemError

log = logging.getLogger("stratamem.hermes")

ACTIONS = ("add", "replace", "remove")
TARGETS = ("memory", "user")
_lock = threading.Lock()


@functools.cache
def _workspace(home: Path) -> Any:
    from stratamem.core.workspace.service import WorkspaceMemory

    return WorkspaceMemory(home)


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
    hermes_home: Path,
    home: Path,
    namespace: Namespace,
    action: str,
    target: str,
    content: str,
    metadata: dict[str, Any] | None,
) -> None:
    """Apply one built-in memory write; bad input raises ``StratamemError`` and changes nothing."""
    meta = dict(metadata or {})
    old_text = str(meta.get("old_text") or "")
    if action == "remove" and not old_text:
        old_text = content or ""
    validate(action, target, content, old_text)
    ws = _workspace(home)
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
        store = ws.recall_store(root)
        source = {
            "agent_id": namespace.profile_id,
            "session_id": str(meta.get("session_id") or namespace.session_key or "") or None,
            "origin": "hermes.memory_tool",
        }
        if action in ("replace", "remove"):
            hits = store.search(old_text, kinds=["preference"], limit=5).hits
            match = next((h.record for h in hits if _matches(h.record.content, old_text)), None)
            remover = getattr(store, "remove", None) or getattr(store, "delete", None)
            if match is not None and callable(remover):
                remover(match.id)
            elif match is not None:
                log.info("recall store cannot remove records yet; %s kept", match.id)
        if action in ("add", "replace"):
            store.append("preference", content, tags=["hermes", "user"], source=source)
