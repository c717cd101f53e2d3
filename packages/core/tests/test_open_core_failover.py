"""A process whose ``open_core`` reached another process's engine (a ``RemoteCore``) keeps working
when that owner leaves: it finds the next owner or takes the home over, and no acknowledged
``turn_end`` is lost or doubled across the hand-over (before the fix every later call failed with
``transport_closed``).

Real processes on one real home: the owner (``LocalCore``, serving its socket) exits cleanly or is
SIGKILLed while the second process is capturing with several writers at once; a call cut off by
the owner's exit must be acknowledged once or fail with a typed error (retried with the same turn
key, as a host does). A third, fresh process then opens the home and must list every acknowledged
turn exactly once. Every wait is bounded; a failure shows each process's stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from failover_support import HOLDER, OWNER, STEP_S, Proc, owner_leaves

#: Captures with WRITERS concurrent writers until told the owner is gone ("busy"; "idle": two turns
#: each, then it waits), then AFTER more turns each; a failed call is retried with the same turn
#: key (RETRIES times); then it searches and lists.
SECOND = textwrap.dedent(
    """
    import asyncio, json, os, sys, time
    from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, TurnResult
    from stratamem.contract.errors import StratamemError
    from stratamem.contract.hostkit.client import owner_record
    from stratamem.core import open_core

    NS = Namespace(agent_kind="hermes")
    WRITERS, AFTER, RETRIES = 4, 5, 3
    home, busy = sys.argv[1], sys.argv[2] == "busy"
    acked, errors = [], []
    owner_gone = asyncio.Event()

    async def write(core, key):
        for attempt in range(RETRIES):
            try:
                ack = await core.turn_end(TurnResult(
                    agent="hermes", session_id="second-s", agent_text="noted",
                    user_text=f"fact {key}: the kestrel count is {len(key)}", namespace=NS,
                    ts=int(time.time() * 1000), turn_key=key))
                acked.append((key, ack.trace_id))
                return
            except StratamemError as exc:  # typed: retry with the same key
                errors.append([key, exc.code.value, exc.message[:200]])
        raise SystemExit(f"{key}: refused {RETRIES} times: {errors[-RETRIES:]}")

    async def writer(core, w):
        i = 0
        while not owner_gone.is_set() and (busy or i < 2):
            await write(core, f"w{w}-{i}")
            i += 1
            await asyncio.sleep(0.01)
        await owner_gone.wait()
        for _ in range(AFTER):
            await write(core, f"w{w}-{i}")
            i += 1

    async def main():
        async with open_core(home, embedding__provider="none") as core:
            kind = type(core).__name__
            writers = [asyncio.create_task(writer(core, w)) for w in range(WRITERS)]
            while len(acked) < 2 * WRITERS:
                await asyncio.sleep(0.01)
            print("writing", flush=True)
            line = await asyncio.to_thread(sys.stdin.readline)
            assert line.strip() == "owner-gone", line
            owner_gone.set()
            await asyncio.gather(*writers)
            hits = await core.search(RetrievalQuery(agent="hermes", query="kestrel", namespace=NS))
            listed = await core.list_traces(ListQuery(namespace=NS, limit=500))
            owner = owner_record(home) or {}
            print(json.dumps({
                "kind": kind, "acked": acked, "errors": errors, "hits": len(hits.hits),
                "listed": [t.user_text for t in listed], "owns": owner.get("pid") == os.getpid(),
            }), flush=True)

    asyncio.run(main())
    """
)

THIRD = textwrap.dedent(
    """
    import asyncio, json, sys
    from stratamem.contract.dtos import ListQuery, Namespace
    from stratamem.core import open_core

    async def main(home):
        async with open_core(home, embedding__provider="none") as core:
            listed = await core.list_traces(ListQuery(namespace=Namespace(agent_kind="hermes"),
                                                      limit=500))
            print(json.dumps({"kind": type(core).__name__,
                              "listed": [[t.id, t.user_text] for t in listed]}), flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)


def _check_every_ack_once(second: dict[str, Any], third: dict[str, Any]) -> None:
    acked = dict(second["acked"])
    assert len(acked) == len(second["acked"]), "a turn key was acknowledged twice"
    for code in {e[1] for e in second["errors"]}:  # a cut-off call: typed, and retried
        assert code in ("transport_closed", "unavailable", "cancelled", "deadline_exceeded")
    assert third["kind"] == "LocalCore"
    texts = Counter(text for _, text in third["listed"])
    doubled = [t for t, n in texts.items() if n > 1]
    assert doubled == [], doubled
    listed = {text.split(":")[0].removeprefix("fact ") for text in texts}
    assert listed == set(acked), (sorted(set(acked) - listed), sorted(listed - set(acked)))
    by_id = {tid: text for tid, text in third["listed"]}
    for key, trace_id in acked.items():  # each ack names the trace that was stored
        assert by_id[trace_id].startswith(f"fact {key}:")


@pytest.mark.parametrize("how", ["clean", "sigkill"])
async def test_a_remote_core_takes_the_home_over_when_its_owner_leaves_mid_capture(
    tmp_path: Path, how: str
) -> None:
    home = tmp_path / "home"
    owner = await Proc.start(tmp_path, "owner", OWNER, str(home))
    second: Proc | None = None
    try:
        assert await owner.line() == "LocalCore"
        second = await Proc.start(tmp_path, "second", SECOND, str(home), "busy")
        assert await second.line() == "writing"  # its writers are capturing through the owner
        await owner_leaves(owner, how)
        await second.send("owner-gone")
        out = json.loads(await second.line())
        assert await second.exit_code() == 0, second.stderr()
    finally:
        owner.kill()
        if second is not None:
            second.kill()
    assert out["kind"] == "RemoteCore"
    assert out["owns"], "the second process should have taken the home over"
    assert out["hits"] > 0
    assert len(out["listed"]) == len(out["acked"])
    third = await Proc.start(tmp_path, "third", THIRD, str(home))
    after = json.loads(await third.line())
    assert await third.exit_code() == 0, third.stderr()
    _check_every_ack_once(out, after)


async def test_a_remote_core_finds_the_new_owner_that_took_the_home_meanwhile(
    tmp_path: Path,
) -> None:
    """The owner leaves while the second process is idle and a new owner takes the home before
    its next call: the call reaches the new owner (no takeover, no second engine)."""
    home = tmp_path / "home"
    first = await Proc.start(tmp_path, "first", OWNER, str(home))
    second = new = None
    try:
        assert await first.line() == "LocalCore"
        second = await Proc.start(tmp_path, "second", SECOND, str(home), "idle")
        assert await second.line() == "writing"  # two turns per writer, then it waits
        await owner_leaves(first, "clean")
        new = await Proc.start(tmp_path, "new", OWNER, str(home))
        assert await new.line() == "LocalCore"
        await second.send("owner-gone")
        out = json.loads(await second.line())
        assert await second.exit_code() == 0, second.stderr()
        assert out["kind"] == "RemoteCore"
        assert not out["owns"], "it should have reached the new owner, not taken the home"
        assert out["errors"] == []
        await owner_leaves(new, "clean")
    finally:
        for p in (first, second, new):
            if p is not None:
                p.kill()
    third = await Proc.start(tmp_path, "third", THIRD, str(home))
    after = json.loads(await third.line())
    assert await third.exit_code() == 0, third.stderr()
    _check_every_ack_once(out, after)


LIGHT = textwrap.dedent(
    """
    import asyncio, json, sys
    from stratamem.core import open_core

    async def main(home):
        async with open_core(home, embedding__provider="none") as core:
            await core.health()
            heavy = sorted(m for m in ("lancedb", "stratamem.core.local") if m in sys.modules)
            print(json.dumps({"kind": type(core).__name__, "heavy": heavy}), flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_a_second_process_reaches_a_serving_owner_without_importing_the_engine(
    tmp_path: Path,
) -> None:
    """It used to try to own the home first, importing LanceDB and the engine (9 and 20 s of a
    second process's open on a loaded machine) only to find the home locked."""
    home = tmp_path / "home"
    owner = await Proc.start(tmp_path, "owner", OWNER, str(home))
    try:
        assert await owner.line() == "LocalCore"
        light = await Proc.start(tmp_path, "light", LIGHT, str(home))
        out = json.loads(await light.line())
        assert await light.exit_code() == 0, light.stderr()
        assert out == {"kind": "RemoteCore", "heavy": []}
        await owner_leaves(owner, "clean")
    finally:
        owner.kill()


async def test_closing_while_a_takeover_is_under_way_releases_the_home(tmp_path: Path) -> None:
    """The core is closed while one of its calls is taking the home over: the close waits for the
    takeover and stops the engine it opened (it used to stay open, holding the home's lock, until
    the process exited)."""
    from stratamem.contract.errors import StratamemError
    from stratamem.contract.hostkit.client import owner_record
    from stratamem.core import open_core

    home = tmp_path / "home"
    owner = await Proc.start(tmp_path, "owner", OWNER, str(home))
    holder: Proc | None = None
    try:
        assert await owner.line() == "LocalCore"
        cm = open_core(home, embedding__provider="none")
        core = await cm.__aenter__()
        assert type(core).__name__ == "RemoteCore"
        await owner_leaves(owner, "clean")
        holder = await Proc.start(tmp_path, "holder", HOLDER, str(home))
        assert await holder.line() == "locked"  # the next owner, not serving yet
        call = asyncio.create_task(core.health())  # finds the owner gone: waits for the next
        end = time.monotonic() + STEP_S
        while not core.recovering:
            assert time.monotonic() < end, "the call never started recovering"
            await asyncio.sleep(0.01)
        closing = asyncio.create_task(cm.__aexit__(None, None, None))
        assert holder.proc.stdin is not None
        holder.proc.stdin.close()  # it leaves without serving: the call takes the home over
        assert await holder.exit_code() == 0
        async with asyncio.timeout(STEP_S):
            await closing
            with contextlib.suppress(StratamemError):
                await call
        assert owner_record(home) is None  # nothing of ours holds the home
    finally:
        owner.kill()
        if holder is not None:
            holder.kill()
