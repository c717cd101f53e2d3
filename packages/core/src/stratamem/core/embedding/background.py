"""Background embedding below foreground priority: a helper that shares a big embedding call with
its caller, from its own session of the model on one thread whose nice value is raised.

The caller (the capture writer, at the process's priority) and the helper take the call's pieces
from one queue; the caller never waits for the helper longer than a piece of its own takes, and
computes a piece the helper has not finished itself. When a core is idle the helper doubles the
throughput; when the acks or recall want the cores the helper yields (nice) and the caller goes on
as it would alone. Two intra-op threads of one session do not work this way: they meet at every
operator, and a descheduled one makes the other spin (session 22 measured it:
bench/results/capture-nice-session22.md).

Where a thread's nice cannot be raised (not Linux, or the call refused, as some sandboxes do) there
is no helper: embedding runs on the shared session alone, as before, and a log line says why. A
helper at normal priority would take the cores the acks need (capture-threads-session21.md).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from stratamem.core.telemetry import get_logger

W = TypeVar("W")
P = TypeVar("P")
R = TypeVar("R")

_log = get_logger("embedding")


def thread_nice() -> int:
    """The calling thread's own nice value (Linux: ``PRIO_PROCESS`` with a thread id)."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def lower_thread_priority(by: int) -> int:
    """Raise the calling thread's nice by ``by`` (capped at 19); returns the value it now runs at.
    Raises ``OSError`` when the OS refuses, ``NotImplementedError`` off Linux (elsewhere
    ``PRIO_PROCESS`` would nice the whole process, acks included)."""
    if not sys.platform.startswith("linux"):
        raise NotImplementedError(f"per-thread nice is Linux only (this is {sys.platform})")
    tid = threading.get_native_id()
    target = min(19, thread_nice() + max(0, int(by)))
    os.setpriority(os.PRIO_PROCESS, tid, target)
    now = thread_nice()
    if now != target:  # a sandbox that accepts the call and ignores it
        raise OSError(f"nice {target} requested, the thread runs at {now}")
    return now


class BackgroundLane(Generic[W]):
    """One niced thread owning a worker built on it (an embedder with its own one-thread session);
    ``share`` runs a call's pieces on the caller's thread and this one."""

    def __init__(self, executor: ThreadPoolExecutor, worker: W, nice: int, native_id: int) -> None:
        self.executor = executor
        self.worker = worker
        #: the nice value the lane's thread runs at
        self.nice = nice
        #: the lane thread's OS thread id
        self.native_id = native_id
        #: pieces the helper finished first / the caller computed after waiting for the helper
        self.helped = 0
        self.redone = 0

    def share(self, pieces: Sequence[P], run: Callable[[P, W | None], R]) -> list[R]:
        """``[run(p, worker or None) for p in pieces]``, the helper's ``run`` getting the worker and
        the caller's ``None``. The caller takes pieces until none is left; a piece the helper still
        holds it waits for only while a helper as fast as itself would still be on it (plus half a
        piece), then computes it itself (whichever result comes first is kept: they are equal).
        A starved helper therefore costs the caller at most half a piece's time."""
        n = len(pieces)
        results: list[Any] = [None] * n
        done = [threading.Event() for _ in range(n)]
        lock = threading.Lock()
        claimed = [0]
        #: when the helper took each of its pieces
        taken: dict[int, float] = {}

        def claim(helper: bool) -> int | None:
            with lock:
                if claimed[0] >= n:
                    return None
                claimed[0] += 1
                if helper:
                    taken[claimed[0] - 1] = time.perf_counter()
                return claimed[0] - 1

        def keep(i: int, value: R, helper: bool) -> None:
            with lock:
                if done[i].is_set():
                    return
                results[i] = value
                done[i].set()
                if helper:
                    self.helped += 1

        def helper() -> None:
            while (i := claim(True)) is not None:
                keep(i, run(pieces[i], self.worker), True)

        self.executor.submit(helper)
        mine, t0 = 0, time.perf_counter()
        while (i := claim(False)) is not None:
            keep(i, run(pieces[i], None), False)
            mine += 1
        piece_s = (time.perf_counter() - t0) / mine if mine else 0.05
        for i in range(n):
            if done[i].is_set():
                continue
            with lock:
                since = time.perf_counter() - taken.get(i, time.perf_counter())
            if not done[i].wait(max(0.0, 1.5 * piece_s - since)):
                keep(i, run(pieces[i], None), False)
                with lock:
                    self.redone += 1
        return results

    @classmethod
    def start(cls, build: Callable[[], W], *, nice: int, name: str) -> BackgroundLane[W] | None:
        """Lower a fresh thread's priority by ``nice``, then ``build`` on it (threads it starts keep
        that value); ``None`` (with a log line, nothing built) when the priority cannot be lowered."""
        executor = ThreadPoolExecutor(1, thread_name_prefix=name)

        def enter() -> tuple[int, int]:
            return lower_thread_priority(nice), threading.get_native_id()

        try:
            value, native = executor.submit(enter).result()
        except (OSError, NotImplementedError) as exc:
            executor.shutdown(wait=False)
            _log.warning(
                "embedding.background_refused",
                lane=name,
                nice=nice,
                error=f"{type(exc).__name__}: {exc}",
                fallback="embedding runs on the shared session alone, at normal priority",
            )
            return None
        try:
            worker = executor.submit(build).result()
        except BaseException:
            executor.shutdown(wait=False)
            raise
        _log.info("embedding.background_lane", lane=name, nice=value)
        return cls(executor, worker, value, native)
