"""Start-up replays the journal in pages, and the pages still on disk are part of the backlog:
``health`` counts them, ``flush`` waits for them and a search made during the replay finds the
newest acknowledged turn (read-your-writes holds across a restart)."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnResult
from stratamem.core import open_core
from stratamem.core.config import defaults
from stratamem.core.embedding import load_embedder
from stratamem.core.storage.ownership import Scope

NS = Namespace(agent_kind="hermes", profile_id="default")
N = 240


def _backlog(home: Path) -> None:
    """``N`` acknowledged, unapplied turns: what a service killed during a burst leaves behind."""
    db = sqlite3.connect(home / "data" / "stratamem.db")
    with db:
        kind, sid, eid, payload, created = db.execute(
            "SELECT kind, session_id, episode_id, payload_json, created_at FROM journal LIMIT 1"
        ).fetchone()
        rows = []
        for i in range(N):
            p = json.loads(payload)
            text = f"replayed fact {i}: the locker code is {i:04d}"
            if i == N - 1:  # the newest acknowledged turn, in the last page on disk
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


async def test_pages_still_on_disk_are_counted_waited_for_and_searched(tmp_path: Path) -> None:
    async with open_core(tmp_path) as core:
        t = int(time.time() * 1000)
        await core.turn_end(
            TurnResult(
                agent="hermes", session_id="s", agent_text="ok", user_text="hi", ts=t, namespace=NS
            )
        )
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
