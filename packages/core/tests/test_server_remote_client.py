"""RemoteCore as a client: the in-flight cap per channel holds under a burst, reconnect after the
server restarts on the same socket, and the blocking facade works from plain threads."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.contract.remote import BlockingRemoteCore, RemoteCore
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service

NS = Namespace(agent_kind="hermes")


async def test_in_flight_calls_per_channel_never_exceed_the_cap(tmp_path: Path) -> None:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    active = peak = 0
    original = core.search

    async def counting(q: Any) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            await asyncio.sleep(0.01)
            return await original(q)
        finally:
            active -= 1

    core.search = counting
    try:
        async with RemoteCore(f"unix:{svc.socket_path}", max_in_flight=8) as remote:
            q = RetrievalQuery(agent="hermes", query="burst", namespace=NS, session_id="b")
            results = await asyncio.gather(*(remote.search(q) for _ in range(300)))
        assert len(results) == 300
        assert 1 < peak <= 8
    finally:
        await svc.stop(1.0)
        await core.shutdown()


async def test_a_client_reconnects_when_the_owner_comes_back_on_the_same_socket(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    core = await open_local_core(home, embedding__provider="none")
    svc = await Service(core).start()
    remote = RemoteCore(f"unix:{svc.socket_path}", reconnect_s=20)
    try:
        assert (await remote.health()).ok
        await svc.stop(0)
        await core.shutdown()

        async def restart() -> tuple[Any, Service]:
            await asyncio.sleep(0.5)
            c = await open_local_core(home, embedding__provider="none")
            return c, await Service(c).start()

        restarting = asyncio.create_task(restart())
        health = await remote.health()  # issued while nothing listens: retried until it does
        core, svc = await restarting
        assert health.ok
    finally:
        await remote.shutdown()
        await svc.stop(0)
        await core.shutdown()


def test_the_blocking_facade_serves_plain_threads(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(120)

    core = run(open_local_core(tmp_path / "home", embedding__provider="none"))
    svc = run(Service(core).start())
    try:
        with BlockingRemoteCore(f"unix:{svc.socket_path}") as remote:
            errors: list[BaseException] = []

            def writer(i: int) -> None:
                try:
                    remote.turn_end(
                        TurnResult(
                            agent="hermes",
                            session_id=f"t{i}",
                            agent_text="ok",
                            user_text=f"threaded question {i}",
                            ts=int(time.time() * 1000),
                            namespace=NS,
                        )
                    )
                except BaseException as exc:  # pragma: no cover - reported below
                    errors.append(exc)

            threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(60)
            assert errors == []
            res = remote.search(
                RetrievalQuery(agent="hermes", query="threaded question", namespace=NS)
            )
            assert len(res.hits) >= 1
            with pytest.raises(StratamemError) as err:
                remote.close_session("missing")
            assert err.value.code == "session_not_found"
            events = remote.subscribe_events(since_seq=0, types=("session.opened",), timeout=10)
            assert next(events).type == "session.opened"
            events.close()
        # a call racing close() (a host's sync thread during its shutdown) gets a typed error its
        # caller can spool on, not a RuntimeError from the closed loop
        with pytest.raises(StratamemError) as closed:
            remote.search(RetrievalQuery(agent="hermes", query="late", namespace=NS))
        assert closed.value.code == "already_shut_down"
    finally:
        run(svc.stop(1.0))
        run(core.shutdown())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


async def test_list_traces_pages_by_cursor_over_grpc(tmp_path: Path) -> None:
    """The keyset cursor crosses the wire: pages over the socket are disjoint and complete while
    new traces arrive between them."""
    from stratamem.contract.dtos import ListQuery, trace_cursor

    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    try:
        async with RemoteCore(f"unix:{svc.socket_path}") as remote:
            base = int(time.time() * 1000) - 60_000
            first = []
            for i in range(7):
                r = TurnResult(
                    agent="hermes",
                    session_id=f"s{i}",
                    user_text=f"t{i}",
                    agent_text="ok",
                    ts=base + i,
                    namespace=NS,
                )
                first.append((await remote.turn_end(r)).trace_id)
            seen: list[str] = []
            after: str | None = None
            while True:
                page = await remote.list_traces(ListQuery(limit=3, namespace=NS, after=after))
                if not page:
                    break
                seen += [t.id for t in page]
                after = trace_cursor(page[-1])
                late = TurnResult(
                    agent="hermes",
                    session_id="late",
                    user_text="late",
                    agent_text="ok",
                    ts=int(time.time() * 1000),
                    namespace=NS,
                )
                await remote.turn_end(late)
            assert seen == first[::-1]
            with pytest.raises(StratamemError) as err:
                await remote.list_traces(ListQuery(namespace=NS, after="not-a-cursor"))
            assert err.value.code == "invalid_argument"
    finally:
        await svc.stop(1.0)
        await core.shutdown()
