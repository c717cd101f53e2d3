"""Two processes opening one home at once: the loser of the race for the home's lock neither
crashes nor gives up while the winner is still opening, and takes the home over if the winner
leaves before serving. (Each of these made the second opener die, and a process waiting for it
hang: test_server_two_processes.)"""

from __future__ import annotations

import asyncio
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core import LocalCore, open_core
from stratamem.core.config.loader import CONFIG_FILE, ensure_config_file
from stratamem.core.server import connect

#: An owner that has taken the home's lock and not served its socket yet (its engine is still
#: opening): the real lock, held until stdin closes, then the process exits without serving.
STARTING_OWNER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from stratamem.core.home import prepare_home
    from stratamem.core.storage.lock import HomeLock
    lock = HomeLock(prepare_home(Path(sys.argv[1]))).acquire()
    print("locked", flush=True)
    sys.stdin.read()
    """
)


def test_openers_creating_a_fresh_homes_config_at_once_all_succeed(tmp_path: Path) -> None:
    """Each opener creates config.yaml if missing: the check-then-create raced (FileExistsError)."""
    errors: list[BaseException] = []
    for trial in range(100):
        home = tmp_path / f"h{trial}"
        home.mkdir()
        start = threading.Barrier(4)

        def create(home: Path = home, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                ensure_config_file(home)
            except BaseException as exc:  # collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=create) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert (home / CONFIG_FILE).stat().st_mode & 0o777 == 0o600
        assert "version: 1" in (home / CONFIG_FILE).read_text()  # whole, never half written
    assert errors == []


def test_an_opener_that_lost_the_check_keeps_the_other_openers_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving forced: this opener saw no config.yaml, another created it just after."""
    (tmp_path / CONFIG_FILE).write_text("version: 1\nretrieval:\n  tier2_top_k: 7\n")
    real_exists = Path.exists
    monkeypatch.setattr(
        Path, "exists", lambda p: False if p.name == CONFIG_FILE else real_exists(p)
    )
    path = ensure_config_file(tmp_path)
    monkeypatch.undo()
    assert "tier2_top_k: 7" in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600


async def _enter(cm: Any) -> Any:
    return await cm.__aenter__()


async def _starting_owner(home: Path) -> asyncio.subprocess.Process:
    owner = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        STARTING_OWNER,
        str(home),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert owner.stdout is not None
    async with asyncio.timeout(120):
        assert (await owner.stdout.readline()).strip() == b"locked"
    return owner


async def _stop(owner: asyncio.subprocess.Process) -> None:
    if owner.returncode is None:
        owner.kill()
        await owner.wait()


async def test_an_opener_waits_for_a_starting_owner_and_takes_over_when_it_leaves(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    owner = await _starting_owner(home)
    try:
        cm = open_core(home, embedding__provider="none")
        opening = asyncio.create_task(_enter(cm))
        await asyncio.sleep(6.5)  # longer than the 5 s an opener used to wait before home_locked
        assert not opening.done(), opening.exception()
        assert owner.stdin is not None
        owner.stdin.close()  # the owner leaves without ever serving (a failed start, a crash)
        async with asyncio.timeout(60):
            assert await owner.wait() == 0
        async with asyncio.timeout(60):
            core = await opening
        try:
            assert isinstance(core, LocalCore)  # it owns the home now; no home_locked
        finally:
            await cm.__aexit__(None, None, None)
    finally:
        await _stop(owner)


async def test_an_owner_that_never_serves_is_a_typed_error_after_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connect, "OWNER_SOCKET_WAIT_S", 1.0)
    home = tmp_path / "home"
    owner = await _starting_owner(home)
    try:
        with pytest.raises(StratamemError) as err:
            async with asyncio.timeout(60):
                async with open_core(home, embedding__provider="none"):
                    pass
        assert err.value.code is ErrorCode.HOME_LOCKED
        assert "has not served its socket" in err.value.message
        assert err.value.details["pid"] == owner.pid
    finally:
        await _stop(owner)
