"""SIGKILL of the service with captures queued: after a restart every acknowledged turn/end (every
turn the listener spooled) is captured exactly once, and the spool is empty again."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).parent))
from dsh_e2e_support import start_server, stop_server

from stratamem.contract.dtos import ListQuery
from stratamem.contract.remote import RemoteCore
from stratamem.dsh.spool import open_spool
from stratamem.hosts.dsh.v1 import dsh_pb2 as pb
from stratamem.hosts.dsh.v1 import dsh_pb2_grpc

SESSIONS = ("k-a", "k-b", "k-c", "k-d")
TURNS = 15


def spool_turn(home: Path, sid: str, turn: int) -> None:
    """Exactly what the plugin's turn/end listener writes (fsync'd) before returning."""
    now = int(time.time() * 1000)
    open_spool(home).put(
        {
            "v": 1,
            "key": f"{sid}:{turn}",
            "session": {
                "ref": f"obj-{sid}",
                "session_id": sid,
                "cwd": "/w",
                "profile_id": "default",
            },
            "turn": turn,
            "user_text": f"{sid} question {turn}",
            "started_at": now - 10,
            "ended_at": now,
            "events": [
                {
                    "type": "assistant/message",
                    "time": now,
                    "data": {
                        "turn": turn,
                        "message": {"content": [{"type": "text", "text": "ok"}]},
                    },
                }
            ],
        },
    )


def stub(home: Path) -> tuple[grpc.Channel, dsh_pb2_grpc.DshHostStub]:
    channel = grpc.insecure_channel(f"unix:{home / 'run' / 'stratamem.sock'}")
    return channel, dsh_pb2_grpc.DshHostStub(channel)


def left_in_spool(home: Path) -> int:
    return open_spool(home).backlog()


async def traces_per_text(home: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    async with RemoteCore(f"unix:{home / 'run' / 'stratamem.sock'}") as core:
        for sid in SESSIONS:
            for t in await core.list_traces(
                ListQuery(session_id=sid, include_all_namespaces=True, limit=200)
            ):
                counts[t.user_text] = counts.get(t.user_text, 0) + 1
    return counts


def test_sigkill_with_queued_captures_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = start_server(home)
    try:
        channel, dsh = stub(home)
        for turn in range(1, TURNS + 1):
            for sid in SESSIONS:
                spool_turn(home, sid, turn)
        dsh.NotifySpool(pb.SpoolNotice(), timeout=10)  # (the service's poller may have begun)
        pending = dsh.Status(pb.StatusRequest(), timeout=10).pending
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        channel.close()
    finally:
        stop_server(proc)
    assert pending > 0, "the kill must hit a non-empty queue"
    assert left_in_spool(home) > 0, "the kill left turns in the spool"

    proc = start_server(home)  # start-up resumes the spool
    try:
        deadline = time.monotonic() + 120
        while left_in_spool(home) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left_in_spool(home) == 0 and open_spool(home).dead() == []
        counts = asyncio.run(traces_per_text(home))
        expected = {f"{s} question {t}" for s in SESSIONS for t in range(1, TURNS + 1)}
        assert set(counts) == expected
        assert set(counts.values()) == {1}, {k: v for k, v in counts.items() if v != 1}
    finally:
        stop_server(proc)
