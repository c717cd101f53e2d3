"""One BLAS thread for the process that serves recall.

A query's matrix-vector product is memory bound: a second OpenBLAS thread buys little, and on a
loaded machine (2 shared cores) a descheduled helper thread turns a 1 ms scan into tens of ms
(measured 3-10× slower at 2k-100k rows). Concurrency comes from requests, not from BLAS.
"""

from __future__ import annotations

from typing import Any

from stratamem.core.telemetry import get_logger

_log = get_logger("hotindex")
_done: set[int] = set()


def limit_blas_threads(threads: int) -> None:
    """Set every loaded BLAS library to ``threads`` (once per value; 0 leaves them alone)."""
    if threads <= 0 or threads in _done:
        return
    _done.add(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads, user_api="blas")
    except Exception as exc:  # advisory: a BLAS we cannot steer still computes the same result
        _log.warning("hotindex.blas_threads_unchanged", error=str(exc))


def blas_info() -> list[dict[str, Any]]:
    from threadpoolctl import threadpool_info

    return [
        {"api": i.get("internal_api"), "threads": i.get("num_threads")}
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
