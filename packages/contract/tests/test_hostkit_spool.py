"""The one durable spool: nothing acknowledged is lost when a writer or a consumer is SIGKILLed, each
turn key applies once, and the spool empties as it is consumed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stratamem.contract.hostkit import spool as module
from stratamem.contract.hostkit.spool import Spool, record_name

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from stratamem.contract.hostkit.spool import Spool

    spool = Spool(Path(sys.argv[1]))
    for i in range(1_000_000):
        spool.put({"key": f"s:{i}", "payload": "x" * (i % 7 * 20_000)})
        print(f"s:{i}", flush=True)  # acknowledged: put returned
    """
)

CONSUMER = textwrap.dedent(
    """
    import sqlite3, sys
    from pathlib import Path
    from stratamem.contract.hostkit.spool import Spool

    spool = Spool(Path(sys.argv[1]))
    db = sqlite3.connect(sys.argv[2], isolation_level=None)
    while True:
        for rec in spool.claim(limit=5):
            # applying is idempotent by turn key, like the core's turn_end
            db.execute("INSERT OR IGNORE INTO applied(key) VALUES (?)", (rec.key,))
            spool.consumed(rec)
            print(rec.key, flush=True)
    """
)


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True, bufsize=1
    )


def _kill_after(proc: subprocess.Popen[str], lines: int) -> list[str]:
    assert proc.stdout is not None
    seen = [proc.stdout.readline().strip() for _ in range(lines)]
    proc.send_signal(signal.SIGKILL)
    seen += [line.strip() for line in proc.stdout.read().splitlines()]
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    return [s for s in seen if s]


def test_a_writer_killed_mid_write_loses_no_acknowledged_record(tmp_path: Path) -> None:
    acked = _kill_after(_spawn(WRITER, str(tmp_path)), 60)
    spool = Spool(tmp_path)
    keys = {r.key for r in spool.claim()}
    assert set(acked) <= keys  # every acknowledged turn is there, whole
    assert len(keys - set(acked)) <= 1  # at most the one renamed just before the kill
    assert spool.dead() == []  # a torn write never shows up as a record


def test_a_consumer_killed_mid_batch_leaves_every_turn_applied_once(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    keys = [f"sess:{i}" for i in range(120)]
    for key in keys:
        spool.put({"key": key, "turn": key})
    db_path = tmp_path / "applied.db"
    sqlite3.connect(db_path).execute(
        "CREATE TABLE applied(key TEXT PRIMARY KEY)"
    ).connection.commit()
    consumed_before_kill = _kill_after(_spawn(CONSUMER, str(spool.dir), str(db_path)), 30)
    assert 30 <= len(consumed_before_kill) < len(keys)
    # a restarted consumer takes back the dead one's claims and finishes
    db = sqlite3.connect(db_path, isolation_level=None)
    while batch := spool.claim():
        for rec in batch:
            db.execute("INSERT OR IGNORE INTO applied(key) VALUES (?)", (rec.key,))
            spool.consumed(rec)
    assert sorted(r[0] for r in db.execute("SELECT key FROM applied")) == sorted(keys)
    # compacted: nothing left but the (empty) directory
    assert spool.backlog() == 0 and list(spool.dir.iterdir()) == []


def test_duplicates_collapse_release_retries_and_bad_records_are_set_aside(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.put({"key": "a:1", "n": 1})
    spool.put({"key": "a:1", "n": 1})  # the same turn spooled twice (two writers)
    assert spool.put({"key": "a:2", "n": 2}).stat().st_mode & 0o777 == 0o600
    (tmp_path / record_name("torn")).write_bytes(b'{"key": "torn", "n"')
    (tmp_path / record_name("foreign")).write_text(json.dumps(["no", "key"]))
    first = spool.claim()
    assert [r.key for r in first] == ["a:1", "a:2"]
    assert len(spool.dead()) == 2 and spool.backlog() == 2
    assert spool.claim() == []  # claimed records are not handed out twice
    spool.release(first[1])
    spool.consumed(first[0])
    (again,) = spool.claim()
    assert again.key == "a:2" and again.data == {"key": "a:2", "n": 2}
    spool.set_aside(again)
    assert spool.backlog() == 0 and spool.done == {"a:1": "captured", "a:2": "failed"}
    assert len(spool.dead()) == 3


def test_a_claim_held_by_a_live_process_is_left_alone(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    path = spool.put({"key": "b:1"})
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.replace(path, path.with_name(f"{path.name}.claimed-{sleeper.pid}"))
        assert spool.claim() == []
    finally:
        sleeper.kill()
        sleeper.wait(10)
    assert [r.key for r in spool.claim()] == ["b:1"]  # its owner died: taken back


def test_the_memory_of_consumed_keys_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "DONE_KEEP", 3)
    spool = Spool(tmp_path)
    for i in range(5):
        spool.put({"key": f"k:{i}"})
    for rec in spool.claim():
        spool.consumed(rec)
    assert list(spool.done) == ["k:2", "k:3", "k:4"]
