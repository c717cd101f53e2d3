"""Bad-input checks shared by every facade entry: typed ``invalid_argument`` before anything is written."""

from __future__ import annotations

from typing import Any

from stratamem.contract.codec import encode_json
from stratamem.contract.dtos import TopK
from stratamem.contract.errors import ErrorCode, StratamemError

#: the longest ``q`` a listing filters by (traces, policies, world models, skills; the viewer's lists)
MAX_FILTER_CHARS = 1000


def bad(message: str, **details: Any) -> StratamemError:
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, details)


def check_text(name: str, value: Any, max_chars: int, *, required: bool = True) -> str:
    """Non-empty (if required), valid UTF-8 (no lone surrogates), at most ``max_chars``."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise bad(f"{name} must be a string", field=name)
    if required and not value.strip():
        raise bad(f"{name} is empty", field=name)
    if len(value) > max_chars:
        raise bad(
            f"{name} is too long ({len(value)} > {max_chars} characters)",
            field=name,
            length=len(value),
            max=max_chars,
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise bad(
            f"{name} is not valid UTF-8 (lone surrogate at {exc.start})", field=name
        ) from None
    return value


def check_id(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 256:
        raise bad(f"{name} must be a non-empty string of at most 256 characters", field=name)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise bad(f"{name} is not valid UTF-8", field=name) from None
    return value


#: the last millisecond of year 9999. Past the wire's int64 a time was acknowledged, then failed in
#: the journal and in every gRPC answer carrying it; below int64 but past this it fits no calendar (SQLite's ``date()``
#: is NULL for it, so opening an episode failed with an untyped IntegrityError; Python's datetime
#: refuses it, so every search rendering it failed)
EPOCH_MS_MAX = 253_402_300_799_999


def check_epoch_ms(name: str, value: Any, *, required: bool = True) -> int | None:
    """Epoch milliseconds from 1970 to the end of year 9999 (``None`` allowed when not required)."""
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= EPOCH_MS_MAX:
        raise bad(
            f"{name} must be epoch milliseconds in [0, {EPOCH_MS_MAX}] (up to year 9999)",
            field=name,
        )
    return value


def check_json(name: str, value: Any) -> None:
    """A value the wire can carry as JSON (``codec.encode_json``: no NaN, nothing but JSON types)."""
    try:
        encode_json(value)
    except StratamemError as exc:
        raise bad(f"{name}: {exc.message}", field=name) from None


def check_top_k(top_k: TopK | None, max_top_k: int) -> None:
    if top_k is None:
        return
    for tier in ("tier1", "tier2", "tier3"):
        v = getattr(top_k, tier)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > max_top_k:
            raise bad(f"top_k.{tier} must be an integer in [0, {max_top_k}]", field=f"top_k.{tier}")


#: the largest key a keyset cursor reaches the stores with: SQLite's and LanceDB's keys are int64
#: (and stored times end at ``EPOCH_MS_MAX``), so every larger key continues after the same rows
CURSOR_KEY_MAX = 2**63 - 1


def check_cursor(after: Any, what: str) -> tuple[int, str]:
    """A keyset cursor ``<int>:<id>`` (``ListQuery.after``) as ``(key, id)``; ``what`` names it in
    the error (e.g. "the `ts:id` cursor of a listed trace"). Only ASCII digits: ``str.isdigit``
    also accepts digits ``int()`` refuses (``"²"``), which ended in an untyped ``ValueError``.

    A key past every row's (even past int64) lists from the newest row, as the listings' newest-
    first order says (the rows older than it are all of them); it is clamped here, once for every
    listing: past int64 LanceDB's filter parser refused it (an untyped ``ValueError`` from
    ``list_traces``), and past 4,300 digits so did ``int()``."""
    if not isinstance(after, str):
        raise bad(f"after must be {what}", field="after")
    key, sep, row_id = after.partition(":")
    if not sep or not (key.isascii() and key.isdigit()):
        raise bad(f"after must be {what}", field="after")
    digits = key.lstrip("0") or "0"
    value = CURSOR_KEY_MAX if len(digits) > 19 else min(int(digits), CURSOR_KEY_MAX)
    return value, check_id("after", row_id)


def check_limit(limit: Any, offset: Any, max_limit: int = 500) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= max_limit:
        raise bad(f"limit must be an integer in [1, {max_limit}]", field="limit")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise bad("offset must be a non-negative integer", field="offset")
