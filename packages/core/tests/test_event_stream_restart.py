"""A ``RemoteCore`` event stream survives its service restarting under it (issue 16).

A real ``stratamem serve`` process is killed (SIGKILL) or stopped (SIGTERM) while a thin client is
subscribed; the client's own calls start a new service, and the stream goes on: every event once,
the old epoch's up to the restart, then the new epoch's from its first. The old code ended the
stream (an error after SIGKILL, a silent end after SIGTERM), so the later events never arrived.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from stratamem.contract.dtos import Event
from stratamem.contract.hostkit.client import connect, owner_record
from stratamem.contract.hostkit.home import pid_alive


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text("embedding:\n  provider: none\n", encoding="utf-8")
    return home


async def _until(predicate: object, within_s: float) -> None:
    give_up = time.monotonic() + within_s
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > give_up:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_an_event_stream_goes_on_across_a_service_restart(tmp_path: Path, sig: int) -> None:
    home = _home(tmp_path)
    seen: list[Event] = []

    def opened() -> list[str]:
        return [str(e.payload.get("session_id")) for e in seen]

    async def main() -> None:
        core = await connect(home)

        async def read() -> None:
            async for e in core.subscribe_events(types=("session.opened",)):
                seen.append(e)

        reader = asyncio.ensure_future(read())
        n = 0
        while not seen:  # calls until the stream is live (its first event arrives)
            n += 1
            await core.open_session("t", session_id=f"warm-{n}")
            await asyncio.wait({reader}, timeout=0.2)
            assert not reader.done(), reader
        await core.open_session("t", session_id="before")
        await _until(lambda: "before" in opened(), 60)
        pid = (owner_record(home) or {})["pid"]
        os.kill(pid, sig)
        await _until(lambda: not pid_alive(pid), 120)
        assert not reader.done(), reader  # the stream waits for the service to come back
        await core.open_session("t", session_id="after-1")  # starts the new service
        await core.open_session("t", session_id="after-2")
        await _until(lambda: "after-2" in opened() or reader.done(), 180)
        assert not reader.done(), reader
        assert (owner_record(home) or {}).get("pid") != pid
        await core.shutdown()
        await asyncio.wait_for(reader, 30)  # ends with the client, without restarting anything

    asyncio.run(main())
    ids = opened()
    keys = [(e.epoch, e.seq) for e in seen]
    assert len(set(keys)) == len(keys) and len(set(ids)) == len(ids)  # nothing twice
    assert ids[-3:] == ["before", "after-1", "after-2"]
    epochs = list(dict.fromkeys(e.epoch for e in seen))
    assert len(epochs) == 2  # the restart is visible as the epoch change
    for epoch in epochs:
        seqs = [e.seq for e in seen if e.epoch == epoch]
        assert seqs == sorted(seqs)
