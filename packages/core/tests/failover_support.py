"""Real processes for the failover tests: an owner that serves a home until told to leave, a
holder that takes a home's lock and never serves (a hand-over that takes as long as the test
wants), and ``Proc``, a process with line-wise stdout whose stderr is shown when a step fails."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

#: one step of a process (open, a phase of writes, a read) may take this long on a loaded machine
STEP_S = 120.0

#: Opens the home (config overrides as JSON in an optional second argument) and serves it until
#: the test closes its stdin.
OWNER = textwrap.dedent(
    """
    import asyncio, json, sys
    from stratamem.core import open_core

    async def main(home, overrides):
        async with open_core(home, embedding__provider="none", **overrides) as core:
            print(type(core).__name__, flush=True)
            await asyncio.to_thread(sys.stdin.read)  # until the test closes stdin: a clean exit

    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}))
    """
)


def _sink(path: Path) -> Any:
    return open(path, "wb")  # closed by the caller's with


class Proc:
    """A test process with line-wise stdout, stderr in a file (shown when a step fails)."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, err: Path) -> None:
        self.name, self.proc, self.err = name, proc, err

    @classmethod
    async def start(cls, tmp: Path, name: str, code: str, *args: str) -> Proc:
        err = tmp / f"{name}.stderr"
        with _sink(err) as sink:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-X",
                "faulthandler",
                "-c",
                code,
                *args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=sink,
                env={**os.environ, "STRATAMEM_EMBEDDING__PROVIDER": "none"},
            )
        return cls(name, proc, err)

    def stderr(self) -> str:
        lines = self.err.read_text(errors="replace").splitlines()
        return "\n".join(x for x in lines if '"level": "debug"' not in x)[-4000:]

    async def line(self) -> str:
        assert self.proc.stdout is not None
        try:
            async with asyncio.timeout(STEP_S):
                raw = await self.proc.stdout.readline()
        except TimeoutError:
            raise AssertionError(
                f"{self.name}: no output in {STEP_S}s\n{await self.stacks()}"
            ) from None
        if not raw:
            code = await self.proc.wait()
            raise AssertionError(f"{self.name} exited {code}\n{self.stderr()}")
        return raw.decode().strip()

    async def stacks(self) -> str:
        """End a stuck process with SIGABRT (faulthandler writes every thread's stack to its
        stderr) and return that stderr: what the process was waiting on."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGABRT)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 10)
        return self.stderr()

    async def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()

    async def exit_code(self) -> int:
        async with asyncio.timeout(STEP_S):
            return await self.proc.wait()

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


async def owner_leaves(owner: Proc, how: str) -> None:
    if how == "sigkill":
        owner.proc.kill()
        assert await owner.exit_code() == -signal.SIGKILL
    else:
        assert owner.proc.stdin is not None
        owner.proc.stdin.close()
        assert await owner.exit_code() == 0, owner.stderr()


#: Takes the home's lock and never serves (an owner whose engine is still opening), until stdin
#: closes.
HOLDER = textwrap.dedent(
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
