"""Start-up replays the journal in pages, and the pages still on disk are part of the backlog:
``health`` counts them, ``flush`` waits for them and a search, a listing, a get or an export made
during the replay sees the newest acknowledged turn (read-your-writes holds across a restart), or,
past its deadline, fails with a typed error instead of answering without it."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, TurnResult
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core import open_core
from stratamem.core.cli import main
from stratamem.core.commands.bundle import export_bundle
from stratamem.core.config import defaults
from stratamem.core.config.loader import patch_config_file
from stratamem.core.embedding import load_embedder
from stratamem.core.storage.ownership import Scope

NS = Namespace(agent_kind="hermes", profile_id="default")
N = 240


def _backlog(home: Path, n: int = N) -> None:
    """``n`` acknowledged, unapplied turns: what a service killed during a burst leaves behind."""
    db = sqlite3.connect(home / "data" / "stratamem.db")
    with db:
        kind, sid, eid, payload, created = db.execute(
            "SELECT kind, session_id, episode_id, payload_json, created_at FROM journal LIMIT 1"
        ).fetchone()
        rows = []
        for i in range(n):
            p = json.loads(payload)
            text = f"replayed fact {i}: the locker code is {i:04d}"
            if i == n - 1:  # the newest acknowledged turn, in the last page on disk
                text = "The submarine's periscope is painted tangerine orange."
            p.update(id=f"tr_replay{i:04d}", user_text=text, summary=text)
            p["search_text"] = f"{text}\nok\n"
            rows.append((kind, p["id"], sid, eid, json.dumps(p), created))
        db.executemany(
            "INSERT INTO journal(kind, target_id, session_id, episode_id, payload_json, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
    db.close()


async def _one_turn(home: Path) -> None:
    async with open_core(home) as core:
        t = int(time.time() * 1000)
        await core.turn_end(
            TurnResult(
                agent="hermes", session_id="s", agent_text="ok", user_text="hi", ts=t, namespace=NS
            )
        )


async def test_pages_still_on_disk_are_counted_waited_for_and_searched(tmp_path: Path) -> None:
    await _one_turn(tmp_path)
    _backlog(tmp_path)
    embedder = load_embedder(defaults()["embedding"])  # the real one: recall ranks by meaning
    async with open_core(tmp_path, embedder=embedder, journal__replay_page=20) as core:
        assert (await core.health()).journal_backlog >= N - 40  # not just the page in memory
        # read-your-writes: the newest acknowledged turn is found while its page is still on disk
        found = await core.search(
            RetrievalQuery(
                agent="hermes",
                query="what colour is the submarine periscope?",
                namespace=NS,
                deadline_at=int(time.time() * 1000) + 120_000,
            )
        )
        assert f"tr_replay{N - 1:04d}" in {h.ref_id for h in found.hits}
        done = await core.flush(timeout_s=120)
        assert done.backlog == 0
        stored = await core.store.count("traces", Scope.everything("test"))
        assert stored == N + 1


#: thousands of pending entries replayed 20 at a time (each page embedded): seconds of replay
MANY = 2000
#: reads that must see the whole replay wait for it with a generous bound: the default (30 s) is a
#: user's deadline, and replaying MANY entries in pages of 20 takes longer than that at load 13+
READ_WAIT = {"journal__replay_read_wait_s": 300}


async def test_get_and_list_during_the_replay_see_every_acknowledged_turn(tmp_path: Path) -> None:
    await _one_turn(tmp_path)
    _backlog(tmp_path, MANY)
    async with open_core(tmp_path, journal__replay_page=20, **READ_WAIT) as core:
        newest = f"tr_replay{MANY - 1:04d}"  # in the last page on disk
        got = await core.get_trace(newest, NS)
        assert got is not None and "tangerine" in got.user_text
        seen: set[str] = set()
        after = None
        while True:
            page = await core.list_traces(ListQuery(limit=500, namespace=NS, after=after))
            seen |= {t.id for t in page}
            if len(page) < 500:
                break
            after = f"{page[-1].ts}:{page[-1].id}"
        assert {f"tr_replay{i:04d}" for i in range(MANY)} <= seen
        assert len(seen) == MANY + 1


async def test_export_right_after_a_restart_holds_every_acknowledged_turn(tmp_path: Path) -> None:
    await _one_turn(tmp_path)
    _backlog(tmp_path, MANY)
    async with open_core(tmp_path, journal__replay_page=20, **READ_WAIT) as core:
        bundle = await export_bundle(core, None)
    ids = {t["id"] for t in bundle["traces"]}
    assert len(ids) == MANY + 1 and f"tr_replay{MANY - 1:04d}" in ids


def test_export_that_cannot_wait_for_the_replay_fails_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    home = tmp_path / "h"
    asyncio.run(_one_turn(home))
    _backlog(home, MANY)
    patch_config_file(home, {"journal.replay_page": 20, "journal.replay_read_wait_s": 0})
    out = tmp_path / "backup.json"
    capsys.readouterr()
    code = main(["--home", str(home), "--offline", "export", "--out", str(out), "--wait", "0"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "[deadline_exceeded] export refused, nothing written" in err
    assert "acknowledged entries" in err
    assert not out.exists()


async def test_a_listing_past_its_replay_wait_is_a_typed_error(tmp_path: Path) -> None:
    await _one_turn(tmp_path)
    _backlog(tmp_path, MANY)
    async with open_core(tmp_path, journal__replay_page=20, journal__replay_read_wait_s=0) as core:
        with pytest.raises(StratamemError) as err:
            await core.list_traces(ListQuery(limit=10, namespace=NS))
        assert err.value.code is ErrorCode.DEADLINE_EXCEEDED
        assert err.value.details["journal_backlog"] > 0
        assert (await core.flush(timeout_s=300)).backlog == 0
        assert len(await core.list_traces(ListQuery(limit=10, namespace=NS))) == 10


async def test_a_delete_during_the_replay_removes_a_trace_still_on_disk(tmp_path: Path) -> None:
    await _one_turn(tmp_path)
    _backlog(tmp_path, MANY)
    newest = f"tr_replay{MANY - 1:04d}"
    async with open_core(tmp_path, journal__replay_page=20, **READ_WAIT) as core:
        assert await core.delete_traces([newest], NS) == 1
        assert (await core.flush(timeout_s=300)).backlog == 0
        assert await core.get_trace(newest, NS) is None  # the replay did not bring it back
        stored = await core.store.count("traces", Scope.everything("test"))
        assert stored == MANY  # the first turn and every replayed one but the deleted


async def test_a_search_that_cannot_wait_out_the_replay_says_it_is_cut_off(tmp_path: Path) -> None:
    await _one_turn(tmp_path)
    _backlog(tmp_path, MANY)
    async with open_core(tmp_path, journal__replay_page=20) as core:
        found = await core.search(
            RetrievalQuery(
                agent="hermes",
                query="what colour is the submarine periscope?",
                namespace=NS,
                deadline_at=int(time.time() * 1000) + 1000,  # too short for 2,000 embeddings
            )
        )
        # the contract: either every acknowledged turn was searched, or the result says it was not
        newest = f"tr_replay{MANY - 1:04d}"
        assert found.cut_off or newest in {h.ref_id for h in found.hits}
