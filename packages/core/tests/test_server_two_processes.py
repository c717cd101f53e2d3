"""One home, two processes writing at once: the first owns and serves it, the second transparently
gets a RemoteCore; no lock errors, nothing lost or duplicated, each sees the other's writes.

Every wait is bounded, in the workers (each step, each barrier) and around them (``run_together``):
a process that fails stops the run at once and the failure shows both processes' stderr."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

from together import assert_all_ok, python_cmd, run_together

#: One step of a worker (open, write, flush, wait for the other, read) may take this long; the
#: whole run gets more, so a stuck step reports itself (with its stack) before the run is stopped.
STEP_S = 90.0
RUN_S = 240.0

WORKER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from stratamem.core import open_core
    from stratamem.contract.dtos import ListQuery, Namespace, TurnResult

    NS = Namespace(agent_kind="hermes")
    N = 25
    STEP_S = float(sys.argv[4])

    def say(*parts):
        print(f"[{time.strftime('%H:%M:%S')}] {ME}:", *parts, file=sys.stderr, flush=True)

    async def wait_for(path, n):
        give_up = time.monotonic() + STEP_S
        while len(found := sorted(p.name for p in Path(path).glob("*"))) < n:
            if time.monotonic() > give_up:
                raise TimeoutError(f"{ME}: waited {STEP_S}s for {n} files in {path}, found {found}")
            await asyncio.sleep(0.05)

    async def main(home, barrier):
        async with asyncio.timeout(STEP_S):
            opening = open_core(home, embedding__provider="none")
            core = await opening.__aenter__()
        try:
            kind = type(core).__name__
            say("opened", kind)
            async with asyncio.timeout(STEP_S):
                for i in range(N):
                    await core.turn_end(TurnResult(
                        agent="hermes", session_id=f"{ME}-s", agent_text=f"{ME} answer {i}",
                        user_text=f"{ME} question {i}", ts=int(time.time() * 1000), namespace=NS,
                        turn_key=f"{ME}-{i}"))
                await core.flush(30.0)
            say("wrote and flushed")
            Path(barrier, f"wrote-{ME}").touch()
            await wait_for(barrier, 2)
            async with asyncio.timeout(STEP_S):
                traces = await core.list_traces(ListQuery(namespace=NS, limit=500))
            say("read", len(traces))
            Path(barrier + "-read").mkdir(exist_ok=True)
            Path(barrier + "-read", ME).touch()
            await wait_for(barrier + "-read", 2)  # the owner stays up until both have read
            print(json.dumps({"kind": kind, "texts": [t.user_text for t in traces]}), flush=True)
        finally:
            async with asyncio.timeout(STEP_S):
                await opening.__aexit__(*sys.exc_info())
            say("closed")

    ME = sys.argv[2]
    asyncio.run(main(sys.argv[1], sys.argv[3]))
    """
)


def test_two_processes_share_one_home_without_lock_errors_or_lost_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "STRATAMEM_EMBEDDING__PROVIDER": "none"}
    results = run_together(
        {
            name: python_cmd(WORKER, str(home), name, str(barrier), str(STEP_S))
            for name in ("alpha", "beta")
        },
        deadline_s=RUN_S,
        env=env,
    )
    assert_all_ok(results)
    outs = []
    for r in results.values():
        assert "home_locked" not in r.stderr, r.stderr[-3000:]
        outs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert sorted(o["kind"] for o in outs) == ["LocalCore", "RemoteCore"]
    expected = sorted(f"{me} question {i}" for me in ("alpha", "beta") for i in range(25))
    for o in outs:
        assert sorted(o["texts"]) == expected  # both see both; nothing lost or duplicated
