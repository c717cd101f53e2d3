"""Which OpenClaw turns are not the user's: ephemeral sessions, heartbeats, bootstrap, sub-agent news.

Such turns get no recall and no capture (hosts.md §2.3 step 1–2).
"""

from __future__ import annotations

import re

_EXACT_SENTINELS = frozenset({"NO_REPLY", "HEARTBEAT_OK", "HEARTBEAT_CHECK", "HEARTBEAT"})
_SENTINEL_SIGNATURES: tuple[str, ...] = (
    "read heartbeat.md",
    "heartbeat.md if it exists",
    "reply heartbeat_ok",
    "heartbeat_ok",
    "heartbeat_check",
    "no_reply",
    "bootstrap.md",
    "read bootstrap.md",
    "a new session was started via /new or /reset",
    "session was started via /new",
    "you just woke up",
    "this is your first run",
    "follow bootstrap",
    "openclaw:bootstrap",
    "[openclaw bootstrap]",
    "pre-compaction memory flush",
    "write any lasting notes to memory",
    "store durable memories now",
)
_SUBAGENT_ANNOUNCEMENT = re.compile(
    r"^\s*(?:\[(?:subagent|sub-agent)[^\]]*\]|(?:a )?sub-?agent (?:task|run)\b[^\n]*"
    r"(?:completed|finished|failed|timed out|ended)|\[System Message\][^\n]*sub-?agent)",
    re.IGNORECASE,
)


def is_temp_session(session_key: str | None) -> bool:
    """``temp:`` sessions are host-internal (slug generator and friends)."""
    return bool(session_key) and str(session_key).startswith("temp:")


def is_explicit_one_shot(session_key: str | None) -> bool:
    """Sessions keyed ``…:explicit:…`` are one-shot and closed after their turn."""
    return bool(session_key) and ":explicit:" in str(session_key)


def is_sentinel(text: str) -> bool:
    """A heartbeat or bootstrap prompt (or an empty one)."""
    stripped = text.strip()
    if not stripped or stripped.upper() in _EXACT_SENTINELS:
        return True
    lowered = stripped.lower()
    return any(sig in lowered for sig in _SENTINEL_SIGNATURES)


def is_subagent_announcement(text: str) -> bool:
    """The host telling the parent that a child finished: not a user turn."""
    return bool(_SUBAGENT_ANNOUNCEMENT.match(text))


def skip_reason(session_key: str | None, text: str) -> str | None:
    """Why a turn is skipped, or ``None`` when it is a real user turn."""
    if is_temp_session(session_key):
        return "temp_session"
    if not text.strip():
        return "empty"
    if is_sentinel(text):
        return "sentinel"
    if is_subagent_announcement(text):
        return "subagent_announcement"
    return None
