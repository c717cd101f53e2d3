"""Helpers for the viewer tests: a core with a running viewer on loopback, and a tiny HTTP client."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import Namespace, TurnInput, TurnResult
from stratamem.core import open_core
from stratamem.core.viewer import ViewerServer

NS = Namespace(agent_kind="openclaw", profile_id="default")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    url: str,
    method: str = "GET",
    body: Any = None,
    *,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    hdrs = dict(headers or {})
    if data is not None and "Content-Type" not in hdrs:
        hdrs["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return Reply(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as err:
        return Reply(err.code, {k.lower(): v for k, v in err.headers.items()}, err.read())


async def call(url: str, method: str = "GET", body: Any = None, **kw: Any) -> Reply:
    return await asyncio.to_thread(request, url, method, body, **kw)


async def turn(core: Any, session: str, user: str, agent: str, ns: Namespace = NS) -> str:
    t = int(time.time() * 1000)
    await core.turn_start(
        TurnInput(agent=ns.agent_kind, session_id=session, user_text=user, ts=t, namespace=ns)
    )
    ack = await core.turn_end(
        TurnResult(
            agent=ns.agent_kind, session_id=session, agent_text=agent, ts=t + 1, namespace=ns
        )
    )
    return str(ack.trace_id)


@asynccontextmanager
async def running_viewer(
    home: Path,
    *,
    tokens: tuple[str, ...] | dict[str, tuple[str, ...]] = (),
    host: str = "127.0.0.1",
    idle_timeout_s: float = 30.0,
    **overrides: Any,
) -> AsyncIterator[tuple[Any, ViewerServer]]:
    overrides.setdefault("embedding__provider", "none")
    async with open_core(home, **overrides) as core:
        viewer = ViewerServer(core, tokens=tokens, idle_timeout_s=idle_timeout_s)
        await viewer.start(host, 0)
        try:
            yield core, viewer
        finally:
            await viewer.stop()
