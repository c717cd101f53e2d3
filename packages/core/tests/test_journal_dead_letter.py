"""The capture journal never blocks on one entry: a poison entry is retried, then set aside while
later turns are applied; set-aside entries can be listed, retried and discarded; applied entries
are pruned while their turn keys keep a resent turn idempotent."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, TurnInput, TurnResult
from stratamem.core import open_core
from stratamem.core.cli import main
from stratamem.core.storage.ownership import Scope

NS = Namespace(agent_kind="hermes", profile_id="default")


def _now() -> int:
    return int(time.time() * 1000)


def _poison(home: Path) -> None:
    """A journal entry that reads fine but cannot be written to LanceDB (turn_id overflows int64)."""
    payload = {
        "id": "tr_poison",
        "episode_id": "ep_poison",
        "session_id": "s-poison",
        "ts": _now(),
        "turn_id": 2**70,
        "user_text": "poison",
        "agent_text": "poison",
        "search_text": "poison",
        "owner_agent_kind": "hermes",
        "owner_profile_id": "default",
        "share_scope": "private",
        "priority": 0.5,
        "_table": "traces",
    }
    c = sqlite3.connect(home / "data" / "stratamem.db")
    with c:
        c.execute(
            "INSERT INTO journal(kind, target_id, session_id, episode_id, payload_json, created_at)"
            " VALUES ('trace', 'tr_poison', 's-poison', 'ep_poison', ?, ?)",
            (json.dumps(payload), _now()),
        )
    c.close()


async def _turn(core: object, i: int, key: str | None = None) -> str:
    t = _now()
    await core.turn_start(  # type: ignore[attr-defined]
        TurnInput(
            agent="hermes", session_id="s", user_text=f"good question {i}", ts=t, namespace=NS
        )
    )
    ack = await core.turn_end(  # type: ignore[attr-defined]
        TurnResult(
            agent="hermes",
            session_id="s",
            agent_text=f"good answer {i}",
            ts=t,
            namespace=NS,
            turn_key=key,
        )
    )
    return str(ack.trace_id)


async def _until(pred: object, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < end, "condition not reached within the bound"
        await asyncio.sleep(0.05)


async def test_one_poison_entry_is_set_aside_and_three_good_turns_are_applied(
    tmp_path: Path,
) -> None:
    async with open_core(tmp_path, embedding__provider="none"):
        pass
    _poison(tmp_path)
    cfg = {"journal__max_attempts": 3, "journal__retry_backoff_ms": 20}
    async with open_core(tmp_path, embedding__provider="none", **cfg) as core:
        ids = [await _turn(core, i) for i in range(3)]
        await core.flush(timeout_s=30)
        stored = {
            r["id"] for r in await core.store.scan("traces", Scope.everything("test"), None, 100)
        }
        assert set(ids) <= stored and "tr_poison" not in stored
        await _until(lambda: core.journal.set_aside_total == 1)
        dead = await core.journal.set_aside()
        assert [d["target_id"] for d in dead] == ["tr_poison"]
        assert dead[0]["attempts"] == 3 and "int" in (dead[0]["last_error"] or "").lower()
        assert not core.journal.pending  # nothing else is held back
        # a later turn is applied at once, a read does not wait for the poison
        later = await _turn(core, 9)
        await core.flush(timeout_s=30)
        assert later in {
            r["id"] for r in await core.store.scan("traces", Scope.everything("test"), None, 100)
        }
        # retry puts it back with a fresh budget (it fails again and is set aside again)
        assert await core.journal.retry_set_aside() == 1
        await _until(lambda: core.journal.set_aside_total == 1 and not core.journal.pending)
        assert await core.journal.discard_set_aside() == 1
        assert core.journal.set_aside_total == 0 and await core.journal.set_aside() == []
    # the three good turns survived the restart; the discarded entry is gone
    async with open_core(tmp_path, embedding__provider="none") as core:
        got = {t.id for t in await core.list_traces(ListQuery(namespace=NS, limit=50))}
        assert {*ids, later} <= got and "tr_poison" not in got


async def test_applied_entries_are_pruned_and_turn_keys_outlive_them(tmp_path: Path) -> None:
    cfg = {"journal__retention_s": 0, "journal__prune_interval_s": 0.05}
    async with open_core(tmp_path, embedding__provider="none", **cfg) as core:
        first = await _turn(core, 1, key="k-1")
        await core.flush(timeout_s=30)

        def journal_rows() -> int:
            return int(core.db.query("SELECT count(*) FROM journal")[0][0])

        await _until(lambda: journal_rows() == 0)
        kept = core.db.query("SELECT target_id FROM turn_keys WHERE turn_key='k-1'")
        assert [r[0] for r in kept] == [first]
        # the same turn resent after its entry was pruned: same ack, nothing new stored
        again = await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s",
                agent_text="good answer 1",
                ts=_now(),
                namespace=NS,
                turn_key="k-1",
            )
        )
        assert again.trace_id == first
        await core.flush(timeout_s=30)
        assert len(await core.list_traces(ListQuery(namespace=NS, limit=50))) == 1


async def test_turn_keys_are_forgotten_after_their_own_retention(tmp_path: Path) -> None:
    """The compact index keeps a window of turns (``turn_key_retention_s``), not every turn."""
    cfg = {
        "journal__retention_s": 0,
        "journal__prune_interval_s": 0.05,
        "journal__turn_key_retention_s": 1,
    }
    async with open_core(tmp_path, embedding__provider="none", **cfg) as core:
        await _turn(core, 1, key="k-1")
        await _turn(core, 2, key="k-2")
        await core.flush(timeout_s=30)

        def left() -> int:
            rows = core.db.query("SELECT count(*) FROM journal")[0][0]
            return int(rows) + int(core.db.query("SELECT count(*) FROM turn_keys")[0][0])

        await _until(lambda: left() == 0)
        # past the window a resent key is a new turn: it is stored, never lost
        await _turn(core, 1, key="k-1")
        await core.flush(timeout_s=30)
        assert len(await core.list_traces(ListQuery(namespace=NS, limit=50))) == 3


def test_cli_lists_and_discards_set_aside_entries_and_doctor_counts_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def set_aside_one() -> None:
        async with open_core(tmp_path, embedding__provider="none"):
            pass
        _poison(tmp_path)
        cfg = {"journal__max_attempts": 2, "journal__retry_backoff_ms": 20}
        async with open_core(tmp_path, embedding__provider="none", **cfg) as core:
            await _until(lambda: core.journal.set_aside_total == 1)

    asyncio.run(set_aside_one())
    home = ["--home", str(tmp_path)]
    capsys.readouterr()
    assert main([*home, "doctor"]) == 0
    assert json.loads(capsys.readouterr().out)["journal_set_aside"] == 1
    assert main([*home, "journal", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)["set_aside"]
    assert [(d["target_id"], d["attempts"]) for d in listed] == [("tr_poison", 2)]
    assert main([*home, "journal", "discard", str(listed[0]["seq"])]) == 0
    assert json.loads(capsys.readouterr().out) == {"discarded": 1}
    assert main([*home, "journal", "list"]) == 0
    assert json.loads(capsys.readouterr().out) == {"set_aside": []}


def test_journal_retry_with_a_running_service_is_applied_at_once(tmp_path: Path) -> None:
    """`stratamem journal retry` beside a real `stratamem serve`: the service's writer applies the
    entry right away (it used to wait for the next housekeeping tick, 300 s by default)."""
    import subprocess
    import sys

    from stratamem.contract.hostkit.client import connect, live_socket

    stratamem = str(Path(sys.executable).parent / "stratamem")
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text("embedding:\n  provider: none\n", encoding="utf-8")

    async def make_home() -> None:
        async with open_core(home):
            pass

    asyncio.run(make_home())
    _poison(home)
    c = sqlite3.connect(home / "data" / "stratamem.db")
    with c:  # set aside after its retries; then the cause was fixed (the row now fits)
        payload = json.loads(c.execute("SELECT payload_json FROM journal").fetchone()[0])
        c.execute(
            "UPDATE journal SET payload_json=?, set_aside_at=?, attempts=5, last_error='was bad'",
            (json.dumps({**payload, "turn_id": 1}), _now()),
        )
    c.close()
    serve = subprocess.Popen(
        [stratamem, "--home", str(home), "serve"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        end = time.monotonic() + 120
        while live_socket(home) is None:
            assert serve.poll() is None and time.monotonic() < end, "serve did not come up"
            time.sleep(0.05)
        listed = subprocess.run(
            [stratamem, "--home", str(home), "journal", "list"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert listed.returncode == 0, listed.stderr
        assert [d["target_id"] for d in json.loads(listed.stdout)["set_aside"]] == ["tr_poison"]
        out = subprocess.run(
            [stratamem, "--home", str(home), "journal", "retry"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["requeued"] == 1

        async def applied() -> None:
            core = await connect(home, 60)
            try:
                # flush waits for what the writer holds (bounded far below the 300 s tick)
                await core.flush(timeout_s=60)
                assert await core.get_trace("tr_poison", namespace=NS) is not None
                health = await core.health()
                assert health.journal_backlog == 0
            finally:
                await core.shutdown()

        asyncio.run(applied())
    finally:
        serve.terminate()
        serve.wait(60)
