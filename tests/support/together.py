"""Run a few test processes at once and fail fast, showing every process's own output.

Processes that wait for each other (barrier files, an owner that stays up for its clients) turn one
failure into a hang of the others: waiting on them one at a time with ``communicate(timeout=...)``
then reports the wrong process after minutes and never reads the failed one's stderr. Here every
process is read concurrently; the first one to exit non-zero ends the run (the rest are stopped),
and so does an overall deadline, after which still-running processes are asked for their Python
stacks (``-X faulthandler`` + SIGABRT) before they are killed. The failure message carries each
process's return code and the tail of its stderr.
(On ``sys.path`` through ``[tool.pytest.ini_options] pythonpath``; never shipped in a wheel.)
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

#: How much of each process's stderr a failure shows.
TAIL_CHARS = 4000


@dataclass
class Finished:
    name: str
    returncode: int | None
    stdout: str
    stderr: str
    stopped: str = ""  # why the run stopped this process ("" when it exited on its own)


def python_cmd(code: str, *args: str) -> list[str]:
    """``python -c code args`` in this interpreter, with faulthandler on (SIGABRT dumps stacks)."""
    return [sys.executable, "-X", "faulthandler", "-c", code, *args]


def run_together(
    cmds: Mapping[str, Sequence[str]],
    *,
    deadline_s: float,
    env: Mapping[str, str] | None = None,
    started: Callable[[], None] | None = None,
    poll_s: float = 0.05,
) -> dict[str, Finished]:
    """Start every command at once; return when all exited, one failed, or ``deadline_s`` passed.

    ``started`` runs once every process is spawned (e.g. it opens a start gate they wait on)."""
    procs = {
        name: subprocess.Popen(
            list(cmd),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env) if env is not None else None,
        )
        for name, cmd in cmds.items()
    }
    outputs: dict[str, tuple[str, str]] = {}

    def read(name: str, proc: subprocess.Popen[str]) -> None:
        outputs[name] = proc.communicate()

    readers = [
        threading.Thread(target=read, args=(n, p), daemon=True, name=f"read-{n}")
        for n, p in procs.items()
    ]
    for r in readers:
        r.start()
    stopped: dict[str, str] = {}
    give_up = time.monotonic() + deadline_s
    try:
        if started is not None:
            started()
        while any(p.poll() is None for p in procs.values()):
            failed = [n for n, p in procs.items() if p.returncode not in (None, 0)]
            if failed:
                reason = f"stopped because {', '.join(failed)} failed"
                stopped.update({n: reason for n, p in procs.items() if p.poll() is None})
                break
            if time.monotonic() > give_up:
                stopped.update(
                    {
                        n: f"still running after the {deadline_s:.0f}s deadline"
                        for n, p in procs.items()
                        if p.poll() is None
                    }
                )
                _dump_stacks([procs[n] for n in stopped])
                break
            time.sleep(poll_s)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
        for r in readers:
            r.join(30)
    return {
        n: Finished(n, p.returncode, *outputs.get(n, ("", "")), stopped=stopped.get(n, ""))
        for n, p in procs.items()
    }


def _dump_stacks(procs: Sequence[subprocess.Popen[str]], wait_s: float = 5.0) -> None:
    """SIGABRT: a process started with ``-X faulthandler`` writes every thread's stack to stderr."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGABRT)
    end = time.monotonic() + wait_s
    while time.monotonic() < end and any(p.poll() is None for p in procs):
        time.sleep(0.05)


def report(results: Mapping[str, Finished]) -> str:
    """Every process's return code, why it was stopped, and the tail of its stderr and stdout."""
    parts = []
    for r in results.values():
        head = f"--- {r.name}: returncode {r.returncode}" + (f" ({r.stopped})" if r.stopped else "")
        parts.append(
            f"{head}\nstderr (tail):\n{r.stderr[-TAIL_CHARS:]}\nstdout (tail):\n{r.stdout[-1000:]}"
        )
    return "\n".join(parts)


def assert_all_ok(results: Mapping[str, Finished]) -> None:
    """Every process exited 0 on its own; else fail with every process's output."""
    bad = [r for r in results.values() if r.returncode != 0 or r.stopped]
    if bad:
        raise AssertionError(
            f"{', '.join(r.name for r in bad)} did not finish cleanly\n{report(results)}"
        )
