"""The episode listing's keyset cursor over the wire (real gRPC on the home's socket) and through
the viewer's HTTP API: pages disjoint and complete across tied start times while episodes are
added, a bad cursor the same typed error ``ListTraces`` gives."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, TurnResult, episode_cursor
from stratamem.contract.errors import StratamemError
from stratamem.contract.remote import RemoteCore
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service

from .viewer_support import call, running_viewer

NS = Namespace(agent_kind="hermes")
OTHER = Namespace(agent_kind="openclaw")


def _turn(session: str, ts: int, ns: Namespace = NS) -> TurnResult:
    """A new session's first turn: it opens an episode started at ``ts``."""
    return TurnResult(
        agent=ns.agent_kind,
        session_id=session,
        user_text=f"task of {session}",
        agent_text="ok",
        ts=ts,
        namespace=ns,
    )


async def test_list_episodes_pages_by_cursor_over_grpc(tmp_path: Path) -> None:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    try:
        async with RemoteCore(f"unix:{svc.socket_path}") as remote:
            base = int(time.time() * 1000) - 60_000
            made = []
            for i, ts in enumerate([base] * 4 + [base + 1 + i for i in range(3)]):
                made.append((ts, (await remote.turn_end(_turn(f"s{i}", ts))).episode_id))
                await remote.turn_end(_turn(f"o{i}", ts, OTHER))
            seen: list[str] = []
            after: str | None = None
            for n in range(20):
                page = await remote.list_episodes(ListQuery(limit=3, namespace=NS, after=after))
                if not page:
                    break
                seen += [e.id for e in page]
                after = episode_cursor(page[-1])
                await remote.turn_end(_turn(f"late{n}", int(time.time() * 1000)))
            assert seen == [i for _, i in sorted(made, reverse=True)]
            with pytest.raises(StratamemError) as err:
                await remote.list_episodes(ListQuery(namespace=NS, after="not-a-cursor"))
            assert err.value.code == "invalid_argument"
            assert err.value.details.get("field") == "after"
    finally:
        await svc.stop(1.0)
        await core.shutdown()


async def test_the_viewer_pages_episodes_by_next_without_gaps_or_repeats(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        base = int(time.time() * 1000) - 60_000
        made = set()
        for i, ts in enumerate([base] * 5 + [base + 1, base + 2]):
            made.add((await core.turn_end(_turn(f"s{i}", ts))).episode_id)
        seen: list[str] = []
        url = viewer.url + "api/episodes?limit=3&namespace=hermes/default"
        for _ in range(20):
            page = (await call(url)).json()
            seen += [e["id"] for e in page["items"]]
            if page["next"] is None:
                break
            url = viewer.url + f"api/episodes?limit=3&namespace=hermes/default&after={page['next']}"
        assert len(seen) == len(set(seen)) and set(seen) == made
        bad = await call(viewer.url + "api/episodes?after=not-a-cursor")
        assert bad.status == 400 and bad.json()["error"]["details"]["field"] == "after"
