"""The journal writer appends the rows ``turn_end`` just minted (LanceDB ``add()``, no join over
the table's ids) and ``merge_insert``s everything that may already be stored: a replay after a
death between LanceDB's commit and ``journal_mark_applied``, and any retry after a failure that
may have followed the commit. Neither path may leave a row twice or lose one."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import lancedb
import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TracePatch, TurnEndAck, TurnResult
from stratamem.core import open_core
from stratamem.core.storage.ownership import Scope

NS = Namespace(agent_kind="hermes")

# The child takes turns until the writer's ``KILL_AT``-th ``journal_mark_applied``, and dies there
# (os._exit: no cleanup, like SIGKILL) after that batch's LanceDB write committed.
CHILD = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from stratamem.core import open_core
    from stratamem.core.storage.sqlite import Database
    from stratamem.contract.dtos import TurnResult

    KILL_AT = int(sys.argv[2])
    mark_applied = Database.journal_mark_applied
    calls = []

    def dying(self, seqs, error=None):
        calls.append(list(seqs))
        if len(calls) == KILL_AT:
            os._exit(9)
        return mark_applied(self, seqs, error)

    Database.journal_mark_applied = dying

    async def main(home):
        async with open_core(home, embedding__provider="none") as core:
            i = 0
            while True:
                word = "quill" + "".join("abcdefghij"[int(d)] for d in str(i))
                ack = await core.turn_end(TurnResult(
                    agent="hermes", session_id="s-append", agent_text=f"answer {i}",
                    user_text=f"appended question number {i} about {word}",
                    ts=int(time.time() * 1000), turn_key=f"turn-{i}"))
                print(f"ACK {i} {ack.trace_id}", flush=True)
                if i % 3 == 2:
                    await asyncio.sleep(0.05)  # let the writer apply a few batches
                i += 1

    asyncio.run(main(sys.argv[1]))
    """
)


def _stored_ids(home: Path) -> list[str]:
    """Every id in the LanceDB traces table, read from disk by another client."""
    db = lancedb.connect(str(home / "data" / "lance"))
    return list(db.open_table("traces").to_arrow().column("id").to_pylist())


def _journal(home: Path) -> tuple[set[str], set[str]]:
    """(every trace id the journal acknowledged, those not marked applied)."""
    db = sqlite3.connect(home / "data" / "stratamem.db")
    try:
        rows = db.execute("SELECT target_id, applied_at FROM journal WHERE kind='trace'").fetchall()
    finally:
        db.close()
    return {r[0] for r in rows}, {r[0] for r in rows if r[1] is None}


def test_death_after_the_append_committed_replays_every_turn_exactly_once(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(home), "4"],
        capture_output=True,
        text=True,
        env={**os.environ, "LANCEDB_LOG": "error"},
        timeout=180,
    )
    assert proc.returncode == 9, proc.stderr[-2000:]
    acked = dict(line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("ACK "))
    journaled, unapplied = _journal(home)
    before = _stored_ids(home)
    assert set(acked.values()) <= journaled
    # the kill landed where it should: rows LanceDB holds that the journal still calls unapplied
    stored_unapplied = unapplied & set(before)
    assert stored_unapplied, "the child should die after its LanceDB write, before the mark"
    assert len(before) == len(set(before))

    asyncio.run(_verify_replay(home, acked, journaled, stored_unapplied))


async def _verify_replay(
    home: Path, acked: dict[str, str], journaled: set[str], stored_unapplied: set[str]
) -> None:
    async with open_core(home, embedding__provider="none") as core:
        assert core.replayed >= len(stored_unapplied)
        await core.flush(60)
        ids = [r["id"] for r in await core.store.scan("traces", Scope.everything("t"), None, 10**5)]
        assert len(ids) == len(set(ids)), "a replayed row was appended a second time"
        assert core.journal.merges_total >= 1  # the replay merged on id
        assert set(ids) == journaled
        assert await core.store.count("traces", Scope.everything("t")) == len(journaled)
        # the turns of the batch that died are found, once
        i = next(i for i, t in acked.items() if t in stored_unapplied)
        word = "quill" + "".join("abcdefghij"[int(d)] for d in i)
        res = await core.search(RetrievalQuery(agent="hermes", query=word, namespace=NS))
        assert [h.ref_id for h in res.hits].count(acked[i]) == 1
        # a new turn after the replay is new again: appended
        appends = core.journal.appends_total
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s-append",
                agent_text="after",
                user_text="a turn after the replay",
                ts=int(time.time() * 1000),
            )
        )
        await core.flush(30)
        assert core.journal.appends_total == appends + 1
        after = _stored_ids(home)
        assert len(after) == len(set(after)) == len(journaled) + 1


async def _take_turns(core: Any, session_id: str, text: str, n: int) -> list[TurnEndAck]:
    """``n`` turns of one session: user text ``f"{text} {i}"``."""
    acks = []
    for i in range(n):
        acks.append(
            await core.turn_end(
                TurnResult(
                    agent="hermes",
                    session_id=session_id,
                    agent_text=f"answer {i}",
                    user_text=f"{text} {i}",
                    ts=int(time.time() * 1000),
                )
            )
        )
    return acks


def _fail_once(obj: Any, name: str) -> list[int]:
    """Make ``obj.name`` raise on its first call, then behave."""
    real = getattr(obj, name)
    failed: list[int] = []

    def once(*args: Any, **kwargs: Any) -> Any:
        if not failed:
            failed.append(1)
            raise RuntimeError(f"injected failure in {name}")
        return real(*args, **kwargs)

    setattr(obj, name, once)
    return failed


@pytest.mark.parametrize("where", ["mark_applied", "hot_index"])
async def test_a_retry_after_the_append_committed_leaves_one_row_per_id(
    tmp_path: Path, where: str
) -> None:
    async with open_core(
        tmp_path, embedding__provider="none", journal__retry_backoff_ms=20
    ) as core:
        # both fail after LanceDB's commit: the journal's mark (SQLite) and the in-memory mirror
        target = core.db if where == "mark_applied" else core.store.hot
        failed = _fail_once(target, "journal_mark_applied" if where == "mark_applied" else "upsert")
        acks = await _take_turns(core, "s-retry", "retried question", 6)
        for _ in range(1200):  # ~60 s: drain() does not wait for a failing entry's retry
            if not core.journal.pending:
                break
            await asyncio.sleep(0.05)
        assert failed and not core.journal.pending
        assert core.journal.set_aside_total == 0
        ids = [r["id"] for r in await core.store.scan("traces", Scope.everything("t"), None, 100)]
        assert sorted(ids) == sorted(a.trace_id for a in acks), "a retried row is there twice"
        # the first attempt appended; the retry looked the ids up
        assert core.journal.appends_total >= 1 and core.journal.merges_total >= 1
        # the hot index holds every row, those the failed attempt stored included
        assert core.store.hot is not None
        hot = core.store.hot.maintenance_table("traces", "test")
        assert hot is not None and hot.live == len(acks)


async def test_new_turns_are_appended_without_a_merge(tmp_path: Path) -> None:
    async with open_core(tmp_path, embedding__provider="none") as core:
        acks = await _take_turns(core, "s-new", "a new question", 30)
        await core.flush(60)
        assert core.journal.merges_total == 0
        assert core.journal.appends_total == core.journal.commits_total >= 1
        ids = [r["id"] for r in await core.store.scan("traces", Scope.everything("t"), None, 100)]
        assert sorted(ids) == sorted(a.trace_id for a in acks)
        # the flag lives in memory only: the journal's payload never carries it
        db = sqlite3.connect(tmp_path / "data" / "stratamem.db")
        try:
            payloads = [r[0] for r in db.execute("SELECT payload_json FROM journal")]
        finally:
            db.close()
        assert payloads and not any('"new"' in p for p in payloads)


async def test_a_retry_keeps_an_edit_made_after_the_append_committed(tmp_path: Path) -> None:
    """The mark fails after the row was stored; the trace is edited while the entry waits for its
    retry; the retry must not put the journaled text back over the edit."""
    async with open_core(
        tmp_path, embedding__provider="none", journal__retry_backoff_ms=1500
    ) as core:
        failed = _fail_once(core.db, "journal_mark_applied")
        ack = await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="s-edit",
                agent_text="the answer as captured",
                user_text="the question as captured",
                ts=int(time.time() * 1000),
            )
        )
        for _ in range(600):  # the single entry failed after its append: it waits to be retried
            if failed and core.journal._failing:
                break
            await asyncio.sleep(0.01)
        assert failed and ack.trace_id in core.journal.pending_ids()
        edited = await core.update_trace(
            ack.trace_id, TracePatch(user_text="the question as edited"), NS
        )
        assert edited is not None and edited.user_text == "the question as edited"
        for _ in range(1200):
            if not core.journal.pending:
                break
            await asyncio.sleep(0.05)
        assert not core.journal.pending and core.journal.merges_total >= 1
        got = await core.get_trace(ack.trace_id, NS)
        assert got is not None and got.user_text == "the question as edited"
        ids = [r["id"] for r in await core.store.scan("traces", Scope.everything("t"), None, 10)]
        assert ids == [ack.trace_id]
        hits = await core.search(RetrievalQuery(agent="hermes", query="edited", namespace=NS))
        assert [h.ref_id for h in hits.hits] == [ack.trace_id]


async def test_a_retry_embeds_only_the_rows_not_stored_yet(tmp_path: Path) -> None:
    """The mark fails after LanceDB's commit; the retry keeps the stored rows (``insert_missing``)
    and must not embed them again: a retried batch of 64 turns cost 64 more embeddings."""
    async with open_core(tmp_path, journal__retry_backoff_ms=20) as core:  # the real embedder
        embedded: list[str] = []
        real_embed = core.journal.embed
        assert real_embed is not None

        def counting(texts: list[str]) -> Any:
            embedded.extend(texts)
            return real_embed(texts)

        core.journal.embed = counting
        failed = _fail_once(core.db, "journal_mark_applied")
        acks = await _take_turns(core, "s-embed", "embedded once question", 6)
        for _ in range(1200):  # ~60 s: drain() does not wait for a failing entry's retry
            if not core.journal.pending:
                break
            await asyncio.sleep(0.05)
        assert failed and not core.journal.pending and core.journal.merges_total >= 1
        ids = [r["id"] for r in await core.store.scan("traces", Scope.everything("t"), None, 100)]
        assert sorted(ids) == sorted(a.trace_id for a in acks)
        assert embedded and len(embedded) == len(set(embedded)), "a stored row was embedded again"
        # the stored rows keep their vectors: each turn is found by its own words
        res = await core.search(
            RetrievalQuery(agent="hermes", query="embedded once question 3", namespace=NS)
        )
        assert res.hits and res.hits[0].ref_id == acks[3].trace_id
