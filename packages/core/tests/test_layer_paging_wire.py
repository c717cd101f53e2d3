"""Keyset paging of policies, world models and skills over the wire (real gRPC on the home's socket)
and through the viewer's HTTP API: ``after`` is honoured (it used to be ignored, so a client that
followed a cursor got the first page again, forever), the viewer answers ``next``, and a bad cursor
is ``invalid_argument`` on ``after``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, learned_cursor
from stratamem.contract.errors import StratamemError
from stratamem.contract.remote import RemoteCore
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service

from .viewer_support import call, running_viewer

NS = Namespace(agent_kind="hermes")
OTHER = Namespace(agent_kind="openclaw")
TABLES = {"policies": "policies", "world_models": "world-models", "skills": "skills"}


async def _seed(core: Any, table: str, ns: Namespace, n: int, prefix: str) -> list[str]:
    """``n`` rows, two of them created in the same millisecond; their ids newest first."""
    base = 1_700_000_000_000
    rows = [
        {
            "id": f"{prefix}_{i:02d}",
            "name": f"{prefix}_{i:02d}",
            "title": f"{prefix} {i}",
            "status": "active",
            "created_at": base + max(i, 1),
            "updated_at": base + 100 - i,  # the newest change is the oldest row's
            "owner_agent_kind": ns.agent_kind,
            "owner_profile_id": ns.profile_id,
            "share_scope": "private",
        }
        for i in range(n)
    ]
    await core.services.store.upsert(table, rows)
    return [r["id"] for r in sorted(rows, key=lambda r: (r["created_at"], r["id"]), reverse=True)]


async def test_grpc_layer_listings_page_by_cursor(tmp_path: Path) -> None:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    try:
        async with RemoteCore(f"unix:{svc.socket_path}") as remote:
            for table in TABLES:
                made = await _seed(core, table, NS, 7, table[:2])
                await _seed(core, table, OTHER, 3, "other")
                lister = getattr(remote, f"list_{table}")
                seen: list[str] = []
                after: str | None = None
                for _ in range(10):
                    page = await lister(ListQuery(limit=3, namespace=NS, after=after))
                    seen += [r.id for r in page]
                    if len(page) < 3:
                        break
                    after = learned_cursor(page[-1])
                assert seen == made, table
                with pytest.raises(StratamemError) as err:
                    await lister(ListQuery(namespace=NS, after="not-a-cursor"))
                assert err.value.code == "invalid_argument", table
                assert err.value.details.get("field") == "after"
    finally:
        await svc.stop(1.0)
        await core.shutdown()


async def test_the_viewer_pages_layers_by_next_without_gaps_or_repeats(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        for table, path in TABLES.items():
            made = await _seed(core, table, NS, 7, table[:2])
            seen: list[str] = []
            url = viewer.url + f"api/{path}?limit=3&namespace=hermes/default"
            for _ in range(10):
                page = (await call(url)).json()
                seen += [r["id"] for r in page["items"]]
                if page["next"] is None:
                    break
                url = (
                    viewer.url + f"api/{path}?limit=3&namespace=hermes/default&after={page['next']}"
                )
            assert seen == made, table
            bad = await call(viewer.url + f"api/{path}?after=not-a-cursor")
            assert bad.status == 400 and bad.json()["error"]["details"]["field"] == "after"
