"""One home, two processes writing at once: the first owns and serves it, the second transparently
gets a RemoteCore; no lock errors, nothing lost or duplicated, each sees the other's writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

WORKER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from stratamem.core import open_core
    from stratamem.contract.dtos import ListQuery, Namespace, TurnResult

    NS = Namespace(agent_kind="hermes")
    N = 25

    async def wait_for(path, n):
        while len(list(Path(path).glob("*"))) < n:
            await asyncio.sleep(0.05)

    async def main(home, me, barrier):
        async with open_core(home, embedding__provider="none") as core:
            kind = type(core).__name__
            for i in range(N):
                await core.turn_end(TurnResult(
                    agent="hermes", session_id=f"{me}-s", agent_text=f"{me} answer {i}",
                    user_text=f"{me} question {i}", ts=int(time.time() * 1000), namespace=NS,
                    turn_key=f"{me}-{i}"))
            await core.flush(30.0)
            Path(barrier, f"wrote-{me}").touch()
            await wait_for(barrier, 2)
            traces = await core.list_traces(ListQuery(namespace=NS, limit=500))
            Path(barrier + "-read").mkdir(exist_ok=True)
            Path(barrier + "-read", me).touch()
            await wait_for(barrier + "-read", 2)  # the owner stays up until both have read
            print(json.dumps({"kind": kind, "texts": [t.user_text for t in traces]}), flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
    """
)


def test_two_processes_share_one_home_without_lock_errors_or_lost_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "STRATAMEM_EMBEDDING__PROVIDER": "none"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(home), name, str(barrier)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("alpha", "beta")
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-3000:]
        assert "home_locked" not in err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(o["kind"] for o in outs) == ["LocalCore", "RemoteCore"]
    expected = sorted(f"{me} question {i}" for me in ("alpha", "beta") for i in range(25))
    for o in outs:
        assert sorted(o["texts"]) == expected  # both see both; nothing lost or duplicated
