"""``BlockingCore`` in a second process reaches the home's owner over its socket (no lock error)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnResult
from stratamem.core.blocking import BlockingCore

CHILD = textwrap.dedent(
    """
    import sys, time
    from stratamem.contract.dtos import TurnResult
    from stratamem.core.blocking import BlockingCore

    core = BlockingCore.open(sys.argv[1])
    print(type(core.core).__name__, flush=True)
    core.turn_end(TurnResult(agent="hermes", session_id="child", agent_text="Noted.",
                             ts=int(time.time() * 1000), user_text="The child process says: the "
                             "backup bucket is called moss-archive-7.", turn_key="child:1"))
    core.close()
    """
)


def test_a_second_process_gets_a_remote_core_and_its_writes_land_in_the_owner(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    owner = BlockingCore.open(home)
    try:
        assert type(owner.core).__name__ == "LocalCore"
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(home)], capture_output=True, text=True, timeout=120
        )
        assert child.returncode == 0, child.stderr
        assert child.stdout.split()[0] == "RemoteCore"
        owner.turn_end(
            TurnResult(
                agent="hermes",
                session_id="owner",
                agent_text="ok",
                ts=int(time.time() * 1000),
                user_text="The owner notes the staging host is sandpiper.",
            )
        )
        res = owner.search(
            RetrievalQuery(
                agent="hermes",
                query="what is the backup bucket called",
                namespace=Namespace(agent_kind="hermes"),
            )
        )
        assert any("moss-archive-7" in h.snippet for h in res.hits), res
    finally:
        owner.close()
