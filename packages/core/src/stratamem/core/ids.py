"""Identifiers: ``<prefix>_`` + 18 Crockford base32 chars (time-ordered head, counted tail).

The journal writer appends the trace rows ``turn_end`` mints, with no join on ``id``
(storage/journal.py), and a capture mints several rows of a turn in one millisecond: such ids must
not collide. The tail was 25 random bits: over a million four-row turns (six same-millisecond
pairs each) a collision had a chance of ~1 in 6 (a silent overwrite under the old merge, a
duplicate id under the append). Now a process counts its tail up within a millisecond (below)
and never repeats one; the tail's random start only keeps two processes apart. The head was 35
bits of milliseconds and wrapped every 397 days (ids stopped sorting by creation); 45 bits last
until the year 3085.

Within one process the ids are strictly increasing (ULID's monotonic rule): an id minted in the
same millisecond as the previous one, or after the clock stepped back, takes the previous tail
plus one. With a random tail alone, two turns captured in one millisecond sorted at random, and
the rows of a session that share a timestamp (an import, a host that stamps the session's date)
lost their order: session neighbours came out wrong for ~3 % of LoCoMo's memories, and two
ingests of the same turns ranked differently (bench/results/locomo.md, session 23).
"""

from __future__ import annotations

import os
import secrets
import threading
import time

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _b32(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


_MAX = (1 << 45) - 1  # 9 base32 characters: the head's milliseconds and the tail alike
_lock = threading.Lock()
_last = [-1, 0]  # the (milliseconds, tail) of the newest id this process minted


def _forget_last() -> None:
    """A forked child starts its own sequence: continuing the parent's, it would mint the ids the
    parent mints next."""
    _last[0], _last[1] = -1, 0


os.register_at_fork(after_in_child=_forget_last)


def new_id(prefix: str) -> str:
    """E.g. ``tr_01kbm6x2h4q7d9pf3a``: 9 chars of milliseconds (sorts by creation) + 9 chars of a
    tail, random at each new millisecond (44 bits: room to count up) and counted up within one."""
    ms = int(time.time() * 1000) & _MAX
    with _lock:
        if ms > _last[0]:
            tail = secrets.randbits(44)
        elif _last[1] < _MAX:
            ms, tail = _last[0], _last[1] + 1
        else:  # 2^44 ids in one millisecond: borrow the next one
            ms, tail = _last[0] + 1, secrets.randbits(44)
        _last[0], _last[1] = ms, tail
    return f"{prefix}_{_b32(ms, 9)}{_b32(tail, 9)}"


def now_ms() -> int:
    return int(time.time() * 1000)
