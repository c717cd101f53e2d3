"""Identifiers: ``<prefix>_`` + 12 Crockford base32 chars (time-ordered head, random tail)."""

from __future__ import annotations

import secrets
import time

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _b32(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_id(prefix: str) -> str:
    """E.g. ``tr_01h9x3k7m2qa``: 7 chars of milliseconds (sorts by creation) + 5 random chars."""
    ms = int(time.time() * 1000) & ((1 << 35) - 1)
    return f"{prefix}_{_b32(ms, 7)}{_b32(secrets.randbits(25), 5)}"


def now_ms() -> int:
    return int(time.time() * 1000)
