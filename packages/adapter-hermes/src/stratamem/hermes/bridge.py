"""One blocking core per home per process, shared by every provider instance (gateway: many agents).

The core is the home's resident service, reached as a thin client (``stratamem.contract.hostkit``):
a fresh ``hermes chat -q`` process imports grpc and the contract only, connects in milliseconds when
the service runs, and starts it (detached, shared by every later process) when it does not.
Connecting happens off the turn thread; every call runs on a small pool and is waited on with a
timeout, so a slow start or store can make a caller give up but never hang it.
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
Opener = Callable[..., Any]


def default_opener(home: Path, **_: Any) -> Any:
    """The home's core as a blocking object: a thin client of the home's resident service (lending
    Hermes' model goes over the service's ``HostLlm`` stream, see ``host_llm``)."""
    from stratamem.contract.hostkit.client import connect_blocking

    return connect_blocking(home)


class _DaemonPool:
    """``submit`` on a fresh daemon thread: a call stuck in the store never holds up process exit
    (``ThreadPoolExecutor`` joins its workers at interpreter exit)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._closed = False

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> cf.Future[T]:
        if self._closed:
            raise RuntimeError("pool is shut down")
        future: cf.Future[T] = cf.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=run, name=self._name, daemon=True).start()
        return future

    def shutdown(self, wait: bool = False, cancel_futures: bool = True) -> None:
        self._closed = True


class CoreBridge:
    """Lazily opened core + a worker pool; ``call`` bounds each call by a timeout."""

    def __init__(
        self,
        home: Path,
        opener: Opener | None = None,
        workers: int = 4,
    ) -> None:
        self.home = home
        self._opener: Opener = opener or default_opener
        self._pool = _DaemonPool("stratamem-hermes")
        self._lock = threading.Lock()
        self._opening: cf.Future[Any] | None = None
        self._closed = False
        self._on_open: list[Callable[[Any], Any]] = []
        #: held while the open's last spool sweep runs and while a writer spools (``spool_unless_open``)
        self._admit = threading.Lock()
        self._serving = False  # that sweep ran: from now on a writer calls the core, never spools
        from stratamem.hermes.spool import Spool

        self.spool = Spool(home)

    def add_on_open(self, callback: Callable[[Any], Any]) -> None:
        """Run ``callback(core)`` each time the core opens (after the spool replay), before it
        serves any call."""
        with self._lock:
            self._on_open.append(callback)

    def _open(self) -> Any:
        """Open the core, replay the spool, run the on-open callbacks, then sweep the spool once
        more, before any call sees the core: turns acknowledged while it was opening are
        read-your-writes too."""
        core = self._opener(self.home)
        with self._lock:
            if self._closed:
                # closed while opening (its provider shut down before the service answered):
                # the core is closed by ``_close_when_open``; replaying the spool here would race
                # the next bridge on this home, whose first recall must see those turns
                return core
            callbacks = list(self._on_open)
        for callback in [self.spool.replay, *callbacks]:
            _run_on_open(callback, core)
        # A writer that found the core still opening spooled its turn; one that did so after the
        # replay above had claimed the spool would wait for the next open (the next process, never
        # for a gateway). Sweep once more with such writers held off; after this they call the core.
        with self._admit:
            if self.spool.pending():
                _run_on_open(self.spool.replay, core)
            self._serving = True
        return core

    def spool_unless_open(self, put: Callable[[], Any]) -> bool:
        """``put()`` (spool a write) and True, unless the core is open and serving: then False and
        the caller calls it. Atomic with the open's last spool sweep, so no spooled write is left
        behind by the open that was in progress when it was written."""
        with self._admit:
            if self._serving and not self._closed:
                return False
            put()
            return True

    def ready(self, timeout: float) -> bool:
        """Whether the core is open (waiting up to ``timeout`` seconds for it)."""
        try:
            self.warm().result(timeout=max(0.0, timeout))
        except Exception:
            return False
        return True

    def warm(self) -> cf.Future[Any]:
        """Start opening the core (once); later calls wait for the same future."""
        with self._lock:
            if self._closed:
                raise StratamemError(ErrorCode.ALREADY_SHUT_DOWN, "stratamem bridge is closed")
            if self._opening is None or (
                self._opening.done() and self._opening.exception() is not None
            ):
                self._opening = self._pool.submit(self._open)
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
            except cf.TimeoutError:
                # still opening: close it whenever it finishes, so no orphan keeps the home
                opening.add_done_callback(_close_when_open)
                core = None
            except Exception:
                core = None
            if core is not None:
                closer = getattr(core, "close", None) or getattr(core, "shutdown", None)
                if callable(closer):
                    done = self._pool.submit(closer)
                    with contextlib.suppress(Exception):
                        done.result(timeout=timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)


def _run_on_open(callback: Callable[[Any], Any], core: Any) -> None:
    try:
        callback(core)
    except Exception as exc:  # a failed replay keeps its files for the next open
        import logging

        logging.getLogger("stratamem.hermes").warning("stratamem on-open: %s", exc)


def _close_when_open(future: cf.Future[Any]) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    closer = getattr(future.result(), "close", None)
    if callable(closer):
        threading.Thread(target=closer, name="stratamem-late-close", daemon=True).start()


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
