"""One blocking core per home per process, shared by every provider instance (gateway: many agents).

Opening happens off the turn thread; every call runs on a small pool and is waited on with a timeout,
so a slow store can make a caller give up but never hang it.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from stratamem.contract.errors import ErrorCode, StratamemError

T = TypeVar("T")
Opener = Callable[[Path], Any]


def default_opener(home: Path) -> Any:
    """The core's thread-safe blocking facade (owner of the home, or a client of its owner)."""
    try:
        from stratamem.core.blocking import BlockingCore
    except ImportError:  # older core without the facade: run ``open_core`` on a private loop
        return LoopCore(home)
    opener = getattr(BlockingCore, "open", None)
    return opener(home) if callable(opener) else BlockingCore(home)


class LoopCore:
    """Minimal blocking view of ``open_core`` on a private event-loop thread (fallback only)."""

    def __init__(self, home: Path) -> None:
        import asyncio

        from stratamem.core import open_core

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="stratamem-core-loop", daemon=True
        )
        self._thread.start()
        self._cm = open_core(home)
        self._core = self._run(self._cm.__aenter__())

    def _run(self, coro: Any) -> Any:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._core, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(attr(*args, **kwargs))

        return call

    def close(self) -> None:
        try:
            self._run(self._cm.__aexit__(None, None, None))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)


class CoreBridge:
    """Lazily opened core + a worker pool; ``call`` bounds each call by a timeout."""

    def __init__(self, home: Path, opener: Opener | None = None, workers: int = 4) -> None:
        self.home = home
        self._opener = opener or default_opener
        self._pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="stratamem-hermes")
        self._lock = threading.Lock()
        self._opening: cf.Future[Any] | None = None
        self._closed = False

    def warm(self) -> cf.Future[Any]:
        """Start opening the core (once); later calls wait for the same future."""
        with self._lock:
            if self._closed:
                raise StratamemError(ErrorCode.ALREADY_SHUT_DOWN, "stratamem bridge is closed")
            if self._opening is None or (
                self._opening.done() and self._opening.exception() is not None
            ):
                self._opening = self._pool.submit(self._opener, self.home)
            return self._opening

    def call(self, fn: Callable[[Any], T], timeout: float) -> T:
        """Run ``fn(core)`` on the pool; ``deadline_exceeded`` if it does not finish in ``timeout``."""
        if timeout <= 0:
            raise StratamemError(ErrorCode.DEADLINE_EXCEEDED, "no time left")
        opening = self.warm()

        def job() -> T:
            core = opening.result()
            return fn(core)

        future = self._pool.submit(job)
        try:
            return future.result(timeout=timeout)
        except cf.TimeoutError as exc:
            future.cancel()
            raise StratamemError(
                ErrorCode.DEADLINE_EXCEEDED, f"stratamem call exceeded {timeout:.2f}s"
            ) from exc

    def submit(self, fn: Callable[[Any], T]) -> cf.Future[T]:
        """Fire-and-forget work (errors stay in the returned future)."""
        opening = self.warm()
        return self._pool.submit(lambda: fn(opening.result()))

    def close(self, timeout: float = 4.0) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            opening = self._opening
        if opening is not None:
            try:
                core = opening.result(timeout=timeout)
            except Exception:
                core = None
            if core is not None:
                closer = getattr(core, "close", None) or getattr(core, "shutdown", None)
                if callable(closer):
                    done = self._pool.submit(closer)
                    with contextlib.suppress(Exception):
                        done.result(timeout=timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)


_REGISTRY_LOCK = threading.Lock()
_REGISTRY: dict[Path, tuple[CoreBridge, int]] = {}


def acquire(home: Path, opener: Opener | None = None) -> CoreBridge:
    """A lease on the process-wide bridge of ``home``."""
    key = home.resolve()
    with _REGISTRY_LOCK:
        entry = _REGISTRY.get(key)
        if entry is None or entry[0]._closed:
            bridge = CoreBridge(key, opener)
            _REGISTRY[key] = (bridge, 1)
        else:
            bridge = entry[0]
            _REGISTRY[key] = (bridge, entry[1] + 1)
        return bridge


def release(bridge: CoreBridge, timeout: float = 4.0) -> None:
    """Drop a lease; the last one closes the core within ``timeout``."""
    key = bridge.home
    with _REGISTRY_LOCK:
        entry = _REGISTRY.get(key)
        if entry is None or entry[0] is not bridge:
            last = True
        elif entry[1] <= 1:
            del _REGISTRY[key]
            last = True
        else:
            _REGISTRY[key] = (bridge, entry[1] - 1)
            last = False
    if last:
        bridge.close(timeout)
