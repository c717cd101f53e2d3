"""The DSH host service inside ``stratamem serve`` stops with the service: its spool poller is
cancelled and awaited, so closing the event loop leaves no pending task behind (the old code left
``_poll_loop`` running, and asyncio logged "Task was destroyed but it is pending!")."""

from __future__ import annotations

import asyncio
import gc
import logging
from pathlib import Path

import pytest

from stratamem.core import open_core
from stratamem.core.server.app import ServeOptions, Service
from stratamem.dsh import service as dsh_service


async def _serve_and_stop(home: Path) -> None:
    async with open_core(home, embedding__provider="none") as core:
        svc = await Service(core, ServeOptions(drain_s=1.0)).start()
        bridge = dsh_service.bridge_for(core, home)
        assert bridge._poller is not None and not bridge._poller.done()  # the real poller runs
        await svc.stop()
        assert bridge._poller is None


def test_service_stop_leaves_no_pending_dsh_task(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            loop.run_until_complete(_serve_and_stop(tmp_path / "home"))
            # what pytest-asyncio and embedding hosts do: close the loop without cancelling tasks
            pending = [t for t in asyncio.all_tasks(loop) if "dsh" in repr(t.get_coro())]
            loop.close()
            del pending
            dsh_service._BRIDGES.clear()  # as at interpreter exit: the module drops its bridges
            gc.collect()
    finally:
        if not loop.is_closed():
            loop.close()
    destroyed = [r.getMessage() for r in caplog.records if "destroyed" in r.getMessage()]
    assert destroyed == []


async def test_stopping_one_service_leaves_another_cores_bridge_running(tmp_path: Path) -> None:
    async with (
        open_core(tmp_path / "a", embedding__provider="none") as core_a,
        open_core(tmp_path / "b", embedding__provider="none") as core_b,
    ):
        svc_a = await Service(core_a, ServeOptions(drain_s=1.0)).start()
        svc_b = await Service(core_b, ServeOptions(drain_s=1.0)).start()
        bridge_a = dsh_service.bridge_for(core_a, tmp_path / "a")
        bridge_b = dsh_service.bridge_for(core_b, tmp_path / "b")
        await svc_a.stop()
        assert bridge_a._poller is None
        assert bridge_b._poller is not None and not bridge_b._poller.done()
        await svc_b.stop()
        assert bridge_b._poller is None
