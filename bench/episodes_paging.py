"""Episode listing pages: the previous listing (``ORDER BY started_at DESC … OFFSET``, no index on
``started_at``) against the current one (migration 5's indexes, keyset cursor), same rows, one run.

Per size, one home is built through the engine's own row writers (``sessions.insert_session`` /
``insert_episode``): four namespaces (70/20/9/1 %), ~40 episodes a session, one episode in ten
sharing its predecessor's millisecond, nine in ten closed. Its SQLite file is copied and taken back
to the schema before migration 5 (its indexes dropped, as a home made by the previous code), where
the previous listing's statement runs verbatim; the current one is ``LocalCore.list_episodes`` on
the original. Both pay one executor hop and build the same ``Episode`` DTOs; samples alternate
old/new so the machine's load falls on both alike.

``python -m bench.episodes_paging --sizes 10000,100000 --out DIR`` or ``python -m bench --only
episodes``. Summary of a run: ``bench/results/episodes-paging.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench import machine
from bench.grpc_overhead import uptime

PAGE = 50
WALK_PAGE = 500
DEPTH = 5_000
BASE_MS = 1_760_000_000_000
#: (agent kind, profile, share of the episodes in %): the listed namespace is the first
SPACES = (("hermes", "alice", 70), ("openclaw", "default", 20), ("dsh", "default", 9))
RARE = ("hermes", "bob", 1)
#: the previous code's statement, verbatim (engine/sessions.py before migration 5)
OLD_SQL = "SELECT * FROM episodes WHERE {where} ORDER BY started_at DESC LIMIT ? OFFSET ?"


def _log(msg: str) -> None:
    print(f"[episodes {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _stats(ms: list[float]) -> dict[str, float]:
    s = sorted(ms)
    return {
        "p50_ms": round(statistics.median(s), 3),
        "p95_ms": round(s[min(len(s) - 1, int(0.95 * len(s)))], 3),
        "min_ms": round(s[0], 3),
        "n": len(s),
    }


async def _build(home: Path, n: int, seed: int) -> Any:
    """A core on ``home`` holding ``n`` episodes (no traces: the listing reads SQLite only)."""
    from stratamem.contract.dtos import Namespace
    from stratamem.core.engine.assemble import open_local_core
    from stratamem.core.engine.sessions import insert_episode, insert_session

    core = await open_local_core(home, embedding__provider="none")
    rng = random.Random(seed)
    pick = [Namespace(agent_kind=k, profile_id=p) for k, p, w in (*SPACES, RARE) for _ in range(w)]

    def fill(c: sqlite3.Connection) -> None:
        sessions: dict[tuple[str, str | None, int], str] = {}
        ts = BASE_MS
        for i in range(n):
            ns = rng.choice(pick)
            key = (ns.agent_kind, ns.profile_id, i // 40)
            sid = sessions.get(key)
            if sid is None:
                sid = sessions[key] = f"se_{len(sessions):09d}"
                insert_session(c, sid, ns.agent_kind, ns, {}, ts)
            if rng.random() < 0.9:  # else: the same millisecond as the previous episode
                ts += rng.randint(1, 60_000)
            eid = f"ep_{ts:013d}{rng.getrandbits(40):010x}"
            insert_episode(c, eid, sid, ns, f"task {i}", "new_task", ts, False)
        c.execute("UPDATE episodes SET status='closed' WHERE rowid % 10 != 0")

    svc = core.services
    await svc.run_db(lambda: svc.db.call(fill))
    await svc.run_db(lambda: svc.db.query("PRAGMA wal_checkpoint(TRUNCATE)"))
    return core


def _previous_schema(src: Path, dst: Path) -> sqlite3.Connection:
    """A copy of ``src`` as the code before migration 5 left it (its indexes dropped, version 4)."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst, check_same_thread=False, isolation_level=None)
    for name in ("episodes_recent", "episodes_status_recent", "episodes_session_recent"):
        con.execute(f"DROP INDEX {name}")
    con.execute("DELETE FROM schema_migrations WHERE version >= 5")
    con.execute("VACUUM")
    con.execute("PRAGMA journal_mode=WAL")
    con.row_factory = sqlite3.Row
    return con


async def _timed(fn: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = await fn()
    return (time.perf_counter() - t) * 1000, out


async def run_size(n: int, repeat: int, walks: int, seed: int = 7) -> dict[str, Any]:
    from stratamem.contract.dtos import ListQuery, Namespace, episode_cursor
    from stratamem.core.storage.ownership import Scope
    from stratamem.core.storage.rows import episode_from_row

    tmp = Path(tempfile.mkdtemp(prefix=f"episodes-{n}-"))
    load_start = machine.load_average()
    t0 = time.perf_counter()
    core = await _build(tmp / "home", n, seed)
    build_s = time.perf_counter() - t0
    old_db = _previous_schema(core.services.db.path, tmp / "previous.db")
    alice = Namespace(agent_kind=SPACES[0][0], profile_id=SPACES[0][1])
    bob = Namespace(agent_kind=RARE[0], profile_id=RARE[1])
    nobody = Namespace(agent_kind="nobody")

    def old(ns: Namespace | None, limit: int, offset: int, status: str | None = None) -> Any:
        where = Scope.visible(ns).where if ns is not None else "true"
        params: list[Any] = []
        if status:
            where += " AND status = ?"
            params.append(status)
        sql = OLD_SQL.format(where=where)

        def q() -> list[Any]:
            return [episode_from_row(r) for r in old_db.execute(sql, [*params, limit, offset])]

        return asyncio.to_thread(q)

    def new(
        ns: Namespace | None,
        limit: int,
        offset: int = 0,
        after: str | None = None,
        status: str | None = None,
    ) -> Any:
        return core.list_episodes(
            ListQuery(
                limit=limit,
                offset=offset,
                after=after,
                status=status,
                namespace=ns,
                include_all_namespaces=ns is None,
            )
        )

    listed = sum(w for *_, w in SPACES[:1]) / 100
    depth = min(DEPTH, int(n * listed) - PAGE)
    deep = (await new(alice, 1, offset=depth - 1))[0]
    cursor = episode_cursor(deep)
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "first page, one namespace (70 %)": (lambda: old(alice, PAGE, 0), lambda: new(alice, PAGE)),
        "first page, a rare namespace (1 %)": (lambda: old(bob, PAGE, 0), lambda: new(bob, PAGE)),
        "first page, every namespace": (lambda: old(None, PAGE, 0), lambda: new(None, PAGE)),
        # the index's worst case: no episode of the namespace, so the walk reaches its end
        "first page, a namespace with none": (
            lambda: old(nobody, PAGE, 0),
            lambda: new(nobody, PAGE),
        ),
        "first page, status=open (10 %)": (
            lambda: old(alice, PAGE, 0, "open"),
            lambda: new(alice, PAGE, status="open"),
        ),
        f"page at depth {depth}: old offset, new cursor": (
            lambda: old(alice, PAGE, depth),
            lambda: new(alice, PAGE, after=cursor),
        ),
        f"page at depth {depth}: old offset, new offset": (
            lambda: old(alice, PAGE, depth),
            lambda: new(alice, PAGE, offset=depth),
        ),
    }
    pages: dict[str, Any] = {}
    for name, (o, w) in cases.items():
        await o(), await w()  # warm the page cache and the codec alike
        ms_old: list[float] = []
        ms_new: list[float] = []
        for i in range(repeat):
            pair = [(o, ms_old), (w, ms_new)]
            for fn, acc in pair if i % 2 else pair[::-1]:
                acc.append((await _timed(fn))[0])
        so, sn = _stats(ms_old), _stats(ms_new)
        pages[name] = {"old": so, "new": sn, "new/old": round(sn["p50_ms"] / so["p50_ms"], 4)}
        _log(f"{n}: {name}: old {so['p50_ms']} ms, new {sn['p50_ms']} ms")

    async def walk_old() -> list[str]:
        ids: list[str] = []
        while True:
            page = await old(alice, WALK_PAGE, len(ids))
            ids += [e.id for e in page]
            if len(page) < WALK_PAGE:
                return ids

    async def walk_new() -> list[str]:
        ids: list[str] = []
        after: str | None = None
        while True:
            page = await new(alice, WALK_PAGE, after=after)
            ids += [e.id for e in page]
            if len(page) < WALK_PAGE:
                return ids
            after = episode_cursor(page[-1])

    w_old: list[float] = []
    w_new: list[float] = []
    ids_old: list[str] = []
    ids_new: list[str] = []
    for i in range(walks):
        both = [(walk_old, w_old, "old"), (walk_new, w_new, "new")]
        for fn, acc, which in both if i % 2 else both[::-1]:
            ms, ids = await _timed(fn)
            acc.append(ms)
            if which == "old":
                ids_old = ids
            else:
                ids_new = ids
    walk: dict[str, Any] = {
        "rows": len(ids_new),
        "pages": -(-len(ids_new) // WALK_PAGE),
        "old": _stats(w_old),
        "new": _stats(w_new),
        "new/old": round(statistics.median(w_new) / statistics.median(w_old), 4),
        "same_rows": sorted(ids_old) == sorted(ids_new) and len(set(ids_new)) == len(ids_new),
    }
    _log(f"{n}: full walk: old {walk['old']['p50_ms']} ms, new {walk['new']['p50_ms']} ms")
    plans = {
        "old": [
            str(r[3])
            for r in old_db.execute(
                "EXPLAIN QUERY PLAN " + OLD_SQL.format(where=Scope.visible(alice).where), [50, 0]
            )
        ],
    }
    old_db.close()
    await core.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "episodes": n,
        "listed_namespace_episodes": len(ids_new),
        "build_s": round(build_s, 1),
        "pages": pages,
        "full_walk": walk,
        "plan_old": plans["old"],
        "load_avg_start": load_start,
        "load_avg_end": machine.load_average(),
    }


async def run_episodes_paging(sizes: list[int], repeat: int = 15) -> dict[str, Any]:
    out: dict[str, Any] = {"uptime_start": uptime(), "sizes": []}
    for n in sizes:
        walks = 3 if n <= 20_000 else 1
        _log(f"{n} episodes: build, then {repeat} alternated samples a case, {walks} walk(s)")
        out["sizes"].append(await run_size(n, repeat, walks))
    out["uptime_end"] = uptime()
    return out


def render(res: dict[str, Any]) -> list[str]:
    """Markdown for ``bench/report.py`` and the script's own output."""
    lines = ["", "## Episode listing pages (old: sort + offset; new: index + cursor)", ""]
    head = "| episodes | case | old p50 (p95) | new p50 (p95) | new / old |"
    for s in res["sizes"]:
        lines += [head, "|---|---|---|---|---|"]
        for name, c in s["pages"].items():
            o, w = c["old"], c["new"]
            lines.append(
                f"| {s['episodes']:,} | {name} | {o['p50_ms']:.2f} ({o['p95_ms']:.2f}) ms "
                f"| {w['p50_ms']:.2f} ({w['p95_ms']:.2f}) ms | {c['new/old']:.3f} |"
            )
        wk = s["full_walk"]
        lines.append(
            f"| {s['episodes']:,} | full walk of the namespace ({wk['rows']:,} episodes, "
            f"{wk['pages']} pages of {WALK_PAGE}; same rows: {wk['same_rows']}) "
            f"| {wk['old']['p50_ms']:.0f} ms (n={wk['old']['n']}) "
            f"| {wk['new']['p50_ms']:.0f} ms (n={wk['new']['n']}) | {wk['new/old']:.3f} |"
        )
        lines += [
            "",
            f"Load (1/5/15-min) {s['load_avg_start']} → {s['load_avg_end']}; home built in "
            f"{s['build_s']} s; old plan: {'; '.join(s['plan_old'])}.",
            "",
        ]
    lines.append(f"`uptime` before: {res['uptime_start']}; after: {res['uptime_end']}.")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.episodes_paging")
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    res = asyncio.run(
        run_episodes_paging([int(x) for x in args.sizes.split(",") if x], args.repeat)
    )
    res["machine"] = machine.describe(Path(__file__).resolve().parent.parent)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "episodes-paging.json").write_text(json.dumps(res, indent=2) + "\n")
    md = "\n".join(render(res)) + "\n"
    (args.out / "episodes-paging.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
