"""A pending journal entry no answer can carry never breaks reads.

``turn_end`` now refuses what the wire cannot carry, but a journal written by an older version
holds such entries: its ``turn_end(tool_calls=[ToolCall(started_at=2**70, ...)])`` was acknowledged
and journaled a trace whose ``ts`` is past int64. While the writer retried it (about 16 s with the
default back-off) gRPC ``ListTraces`` of its namespace failed with ``cannot encode Trace``, and
search answered nothing at all, in process too (rendering its time failed, and a retrieval failure
is an empty result). Reads now skip it; it is still retried, then set aside, and later turns go on.
An older version's entry that the wire can carry once its NaN reads as null is applied and shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, TurnResult
from stratamem.contract.hostkit.client import live_socket
from stratamem.contract.remote import RemoteCore
from stratamem.core import open_core

NS = Namespace(agent_kind="hermes")
#: the entry stays pending (retried once, the next try 10 min away) while the reads run
SLOW_RETRY = {"journal__retry_backoff_ms": 600_000, "journal__retry_backoff_max_ms": 600_000}
#: ... or is set aside after two quick tries
QUICK_SET_ASIDE = {"journal__max_attempts": 2, "journal__retry_backoff_ms": 20}
#: what an older version journaled for a tool call with ``started_at=ended_at=2**70``
FAR = 2**70


def _past_int64() -> dict[str, Any]:
    """An older version's entry for a tool call with ``started_at=ended_at=2**70``."""
    call = {"name": "shell", "input": {"cmd": "ls"}, "output": "ok"}
    return {
        "ts": FAR + 1,
        "tool_calls_json": json.dumps([{**call, "started_at": FAR, "ended_at": FAR}]),
    }


def _now() -> int:
    return int(time.time() * 1000)


async def _until(pred: Any, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < end, "condition not reached within the bound"
        await asyncio.sleep(0.05)


async def _home_with_old_entry(home: Path, **fields: Any) -> dict[str, str]:
    """A real home holding one applied turn and, pending after it, the entry an older version
    journaled for a turn of the same episode (its row as that version wrote it: ``fields``)."""

    async def capture() -> str:
        async with open_core(home, embedding__provider="none") as core:
            ack = await core.turn_end(
                TurnResult(
                    agent="hermes",
                    session_id="s1",
                    agent_text="Noted.",
                    user_text="The heron nests by the north lake.",
                    ts=_now(),
                    namespace=NS,
                    turn_key="k1",
                )
            )
            await core.flush(30)
            return ack.trace_id

    good = await capture()
    db = sqlite3.connect(home / "data" / "stratamem.db")
    with db:
        row = db.execute(
            "SELECT payload_json, session_id, episode_id FROM journal WHERE target_id=?", (good,)
        ).fetchone()
        payload = json.loads(row[0])
        payload.update(
            id="tr_oldversion",
            turn_id=payload["turn_id"] + 1,
            user_text="an older version's turn about the heron",
            agent_text="ran a tool",
            **fields,
        )
        db.execute(
            "INSERT INTO journal(kind, target_id, session_id, episode_id, turn_key, payload_json,"
            " created_at) VALUES ('trace', 'tr_oldversion', ?, ?, 'k2', ?, ?)",
            (row[1], row[2], json.dumps(payload), _now()),
        )
        tids = json.loads(
            db.execute("SELECT trace_ids_json FROM episodes WHERE id=?", (row[2],)).fetchone()[0]
        )
        db.execute(
            "UPDATE episodes SET trace_ids_json=? WHERE id=?",
            (json.dumps([*tids, "tr_oldversion"]), row[2]),
        )
    db.close()
    return {"good": good, "episode": row[2]}


async def _reads_work(core: Any, ids: dict[str, str]) -> None:
    """Every read of the namespace answers, without the unreadable entry."""
    listed = await core.list_traces(ListQuery(namespace=NS, limit=50))
    assert [t.id for t in listed] == [ids["good"]]
    found = await core.search(RetrievalQuery(agent="hermes", query="heron nests", namespace=NS))
    assert [h.ref_id for h in found.hits] == [ids["good"]], found
    assert (await core.get_trace(ids["good"], NS)) is not None
    assert await core.get_trace("tr_oldversion", NS) is None
    assert [t.id for t in await core.timeline(ids["episode"], NS)] == [ids["good"]]


async def test_reads_skip_an_unreadable_pending_entry_in_process(tmp_path: Path) -> None:
    ids = await _home_with_old_entry(tmp_path, **_past_int64())
    async with open_core(tmp_path, embedding__provider="none", **SLOW_RETRY) as core:
        assert (await core.health()).journal_backlog == 1  # pending, waiting for its next try
        await _reads_work(core, ids)
        later = await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s1",
                agent_text="Noted too.",
                user_text="The heron left for the south lake.",
                ts=_now(),
                namespace=NS,
                turn_key="k3",
            )
        )
        await core.flush(30)  # the later turn is applied: the entry holds nothing back
        listed = await core.list_traces(ListQuery(namespace=NS, limit=50))
        assert {t.id for t in listed} == {ids["good"], later.trace_id}
        assert (await core.health()).journal_backlog == 1
    async with open_core(tmp_path, embedding__provider="none", **QUICK_SET_ASIDE) as core:
        await _until(lambda: core.journal.set_aside_total == 1)  # set aside, as before
        dead = await core.journal.set_aside()
        assert [d["target_id"] for d in dead] == ["tr_oldversion"]
        assert "int" in (dead[0]["last_error"] or "").lower()
        assert (await core.health()).journal_backlog == 0
        listed = await core.list_traces(ListQuery(namespace=NS, limit=50))
        assert {t.id for t in listed} == {ids["good"], later.trace_id}


async def test_reads_over_grpc_skip_an_unreadable_pending_entry(tmp_path: Path) -> None:
    """``stratamem serve`` on the home, reads over its socket (ListTraces failed here)."""
    ids = await _home_with_old_entry(tmp_path, **_past_int64())
    async with _served(tmp_path, SLOW_RETRY) as core:
        assert (await core.health()).journal_backlog == 1
        await _reads_work(core, ids)


async def test_a_stored_nan_of_an_older_version_is_listed_as_null_over_grpc(
    tmp_path: Path,
) -> None:
    """An older version stored NaN in a tool call's input (``turn_end`` refuses it now): the row
    applies, and gRPC ``ListTraces``/``GetTrace`` of its namespace failed for good ("value is not
    JSON-serialisable"). It is shown as far as JSON goes: the NaN reads as null."""
    call = {"name": "shell", "input": {"x": float("nan"), "y": 1}, "output": "ok"}
    ids = await _home_with_old_entry(tmp_path, ts=_now(), tool_calls_json=json.dumps([call]))
    async with _served(tmp_path, {}) as core:
        await core.flush(30)
        assert (await core.health()).journal_backlog == 0  # it was never a poison entry
        listed = await core.list_traces(ListQuery(namespace=NS, limit=50))
        assert {t.id for t in listed} == {ids["good"], "tr_oldversion"}
        old = await core.get_trace("tr_oldversion", NS)
        assert old is not None and old.tool_calls[0].input == {"x": None, "y": 1}


@contextlib.asynccontextmanager
async def _served(home: Path, config: dict[str, Any]) -> AsyncIterator[RemoteCore]:
    """A real ``stratamem serve`` on ``home`` (``config`` as environment overrides), reached
    over its socket."""
    env = {**os.environ, "STRATAMEM_EMBEDDING__PROVIDER": "none"}
    env.update({f"STRATAMEM_{k.upper()}": str(v) for k, v in config.items()})
    stratamem = str(Path(sys.executable).parent / "stratamem")
    serve = await asyncio.create_subprocess_exec(
        stratamem,
        "--home",
        str(home),
        "serve",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        end = time.monotonic() + 120
        while (sock := live_socket(home)) is None:
            assert serve.returncode is None and time.monotonic() < end, "serve did not come up"
            await asyncio.sleep(0.05)
        async with RemoteCore(f"unix:{sock}") as core:
            yield core
    finally:
        if serve.returncode is None:
            serve.terminate()
        await asyncio.wait_for(serve.wait(), 60)


async def test_a_stored_time_past_the_calendar_never_fails_a_search_or_the_timeline(
    tmp_path: Path, capsys: Any
) -> None:
    """An older version stored ``ts=2**62`` (it fits int64; ``turn_end`` refuses it now): every
    search of the namespace answered nothing (rendering its time raised, and a retrieval failure
    is an empty result) and ``stratamem timeline`` died with ``year ... is out of range``."""
    from stratamem.core.cli import main

    ids = await _home_with_old_entry(tmp_path, ts=2**62)
    async with open_core(tmp_path, embedding__provider="none") as core:
        await core.flush(30)  # applied: the row is in LanceDB for good
        found = await core.search(RetrievalQuery(agent="hermes", query="heron", namespace=NS))
        assert {h.ref_id for h in found.hits} == {ids["good"], "tr_oldversion"}
    capsys.readouterr()
    args = ["--home", str(tmp_path), "--offline", "timeline", ids["episode"]]
    assert await asyncio.to_thread(main, args) == 0
    out = capsys.readouterr().out
    assert "unknown time" in out and "tr_oldversion" in out
