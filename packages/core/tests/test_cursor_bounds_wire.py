"""The keyset cursor's bounds over the wire (real gRPC on the home's socket) and through the viewer's
HTTP API, the same for traces and episodes: a key past every row's (past int64, past 4,300 digits)
answers the first page, not an untyped error; a negative key or an empty id is
``invalid_argument`` on ``after``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.contract.remote import RemoteCore
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service

from .viewer_support import call, running_viewer

NS = Namespace(agent_kind="hermes")
PAST_EVERY_KEY = ("9223372036854775808:x", "99999999999999999999:x", "9" * 5000 + ":x")


def _turn(i: int, ns: Namespace = NS) -> TurnResult:
    """A new session's only turn: a trace and an episode."""
    ts = int(time.time() * 1000) - 60_000 + i
    return TurnResult(
        agent=ns.agent_kind,
        session_id=f"s{i}",
        user_text=f"t{i}",
        agent_text="ok",
        ts=ts,
        namespace=ns,
    )


async def test_grpc_listings_answer_a_cursor_past_every_key_with_the_first_page(
    tmp_path: Path,
) -> None:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    try:
        async with RemoteCore(f"unix:{svc.socket_path}") as remote:
            for i in range(4):
                await remote.turn_end(_turn(i))
            for lister in (remote.list_traces, remote.list_episodes):
                first = [r.id for r in await lister(ListQuery(limit=3, namespace=NS))]
                assert len(first) == 3
                for after in PAST_EVERY_KEY:
                    page = await lister(ListQuery(limit=3, namespace=NS, after=after))
                    assert [r.id for r in page] == first, (lister, after[:30])
                for bad in ("-1:x", "5:", "5:" + "a" * 257):
                    with pytest.raises(StratamemError) as err:
                        await lister(ListQuery(namespace=NS, after=bad))
                    assert err.value.code == "invalid_argument", (lister, bad)
                    assert err.value.details.get("field") == "after"
    finally:
        await svc.stop(1.0)
        await core.shutdown()


async def test_the_viewer_answers_a_cursor_past_every_key_with_the_first_page(
    tmp_path: Path,
) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        for i in range(4):
            await core.turn_end(_turn(i))
        for listing in ("traces", "episodes"):
            url = viewer.url + f"api/{listing}?limit=3&namespace=hermes/default"
            first = (await call(url)).json()
            assert len(first["items"]) == 3 and first["next"]
            for after in PAST_EVERY_KEY:
                page = await call(url + f"&after={after}")
                assert page.status == 200, (listing, after[:30], page.body[:200])
                assert page.json()["items"] == first["items"]
            bad = await call(url + "&after=-1:x")
            assert bad.status == 400 and bad.json()["error"]["details"]["field"] == "after"
