"""Identifiers: ``<prefix>_`` + 18 Crockford base32 chars (time-ordered head, random tail).

The journal writer appends the trace rows ``turn_end`` mints, with no join on ``id``
(storage/journal.py), and a capture mints several rows of a turn in one millisecond: such ids must
not collide. The tail was 25 random bits: over a million four-row turns (six same-millisecond
pairs each) a collision had a chance of ~1 in 6 (a silent overwrite under the old merge, a
duplicate id under the append). With 45 bits it is ~1 in 6 million. The head was 35 bits of
milliseconds and wrapped every 397 days (ids stopped sorting by creation); 45 bits last until
the year 3085.
"""

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
    """E.g. ``tr_01kbm6x2h4q7d9pf3a``: 9 chars of milliseconds (sorts by creation) + 9 random."""
    ms = int(time.time() * 1000) & ((1 << 45) - 1)
    return f"{prefix}_{_b32(ms, 9)}{_b32(secrets.randbits(45), 9)}"


def now_ms() -> int:
    return int(time.time() * 1000)
