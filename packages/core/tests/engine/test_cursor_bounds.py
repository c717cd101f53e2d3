"""The keyset cursor's bounds, the same in the trace and the episode listing (``check_cursor`` is
their one parser): a key past every row's, even past int64 or 4,300 digits, lists from the newest
(the rows older than it are all of them); a key that is not a non-negative integer, an id that is
empty or longer than 256 characters, or a cursor that is not a string is ``invalid_argument``."""

from __future__ import annotations

from typing import Any

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import commit, sessions, traces
from stratamem.core.engine.services import EngineServices

from .conftest import ALICE, now

#: each lister's page as ids, newest first
LISTERS = {
    "traces": traces.list_traces,
    "episodes": sessions.list_episodes,
}

PAST_EVERY_KEY = (
    "9223372036854775807:x",  # int64's largest
    "9223372036854775808:x",  # one past it: LanceDB's filter parser refused it (ValueError)
    "99999999999999999999:x",
    "9" * 5000 + ":x",  # past int()'s 4,300-digit limit (ValueError in both listings)
    "0" * 4990 + "9" * 20 + ":x",  # leading zeros do not make a key small, nor large
)


async def _seed(svc: EngineServices, ns: Namespace, n: int) -> None:
    """``n`` sessions of one turn each (a trace and an episode apiece); the last stays pending in
    the journal, so the trace listing's pending rows meet the cursor too."""
    base = now() - 60_000
    for i in range(n):
        r = TurnResult(
            agent="hermes", session_id=f"s{i}", user_text=f"t{i}", agent_text="ok", ts=base + i
        )
        await commit.turn_end(svc, r, ns)
        if i == n - 2:
            await svc.journal.drain(60)


async def _ids(svc: EngineServices, what: str, **query: Any) -> list[str]:
    page = await LISTERS[what](svc, ListQuery(**query), ALICE)  # type: ignore[operator]
    return [row.id for row in page]


async def test_a_cursor_past_every_key_lists_from_the_newest_in_both_listings(
    svc: EngineServices,
) -> None:
    await _seed(svc, ALICE, 5)
    for what in LISTERS:
        first = await _ids(svc, what, limit=3)
        assert len(first) == 3, what
        for after in PAST_EVERY_KEY:
            assert await _ids(svc, what, limit=3, after=after) == first, (what, after[:30])
        # a small key with leading zeros is small: nothing is older than 7 ms after 1970
        assert await _ids(svc, what, after="0" * 5000 + "7:x") == [], what


async def test_a_long_id_pages_and_a_malformed_cursor_is_the_same_typed_error(
    svc: EngineServices,
) -> None:
    await _seed(svc, ALICE, 3)
    for what in LISTERS:
        newest = await _ids(svc, what)
        # an id of 256 characters is a valid cursor; "~" sorts after every id we allocate
        assert await _ids(svc, what, after=f"{2**63 - 1}:" + "~" * 256) == newest, what
        for bad in ("-1:x", "-0:x", "+5:x", " 5:x", "5:", "5:  ", "5:" + "a" * 257, 5, b"5:x"):
            with pytest.raises(StratamemError) as err:
                await _ids(svc, what, after=bad)
            assert err.value.code.value == "invalid_argument", (what, bad)
            assert err.value.details["field"] == "after", (what, bad)
