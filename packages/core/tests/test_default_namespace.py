"""No mutable "current namespace": a call that names no namespace reads the home's configured
default namespace (``namespace`` in the defaults table), never whoever called ``turn_start`` last."""

from __future__ import annotations

import time
from pathlib import Path

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, TurnInput, TurnResult
from stratamem.core import LocalCore, open_core

ALICE = Namespace(agent_kind="hermes", profile_id="alice")
SECRET = "alice's locker code is 4711"


def now() -> int:
    return int(time.time() * 1000)


async def _alice_turn(core: LocalCore) -> None:
    t = now()
    await core.turn_start(
        TurnInput(
            agent="hermes", session_id="sa", user_text="my locker code?", ts=t, namespace=ALICE
        )
    )
    await core.turn_end(
        TurnResult(agent="hermes", session_id="sa", agent_text=SECRET, ts=t + 1, namespace=ALICE)
    )
    await core.flush(20)
    # alice starts another turn: on the old core this made her the "current namespace"
    await core.turn_start(
        TurnInput(
            agent="hermes", session_id="sa", user_text="and the bike?", ts=now(), namespace=ALICE
        )
    )


async def test_namespace_less_reads_do_not_see_the_last_callers_data(tmp_path: Path) -> None:
    async with open_core(tmp_path, embedding__provider="none") as core:
        await _alice_turn(core)
        listed = await core.list_traces(ListQuery())
        found = await core.search(RetrievalQuery(agent="hermes", query="locker code"))
        health = await core.health()
        assert not any(SECRET in (t.agent_text or "") for t in listed)
        assert not any(SECRET in h.snippet for h in found.hits)
        assert health.namespace == Namespace()  # the default, not alice
        # alice herself still reads her own trace
        mine = await core.list_traces(ListQuery(namespace=ALICE))
        assert any(SECRET in (t.agent_text or "") for t in mine)


async def test_namespace_less_reads_use_the_configured_default(tmp_path: Path) -> None:
    async with open_core(
        tmp_path,
        embedding__provider="none",
        namespace__agent_kind="hermes",
        namespace__profile_id="alice",
    ) as core:
        await _alice_turn(core)
        listed = await core.list_traces(ListQuery())
        assert any(SECRET in (t.agent_text or "") for t in listed)
        assert (await core.health()).namespace == ALICE
