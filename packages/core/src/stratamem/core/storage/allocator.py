"""Native memory of the serving process: which allocator Arrow uses, and glibc's arenas.

Measured in the soak (bench/soak.py, issue 16): Python's own heap grew ~5 MB per 1,000 turns while
RSS grew ~30; the rest was native memory kept by allocators, not live data:

* Arrow's default pool (mimalloc in the pyarrow wheels) kept the pages of every batch built for a
  LanceDB write in a 1 GiB reserved region that only grew. The system pool hands them back to malloc.
* glibc gives each thread that allocates its own arena (up to 8 per core); LanceDB's runtime threads
  each grew theirs with freed-but-kept chunks. Fewer arenas and a periodic ``malloc_trim`` (which
  returns the free pages of every arena to the OS) keep that flat.
* Even then, with live malloc bytes flat, the arenas' free space kept growing (fragmentation:
  LanceDB's per-write buffers grow with the table, and glibc's dynamic mmap threshold climbs to
  32 MB, so they land in the arenas and leave holes). A fixed mmap threshold sends every allocation
  above it to its own mapping, returned to the OS on free: RSS then stayed flat over 3,500 turns
  (64 KB and 1 MB both). Such allocations pay fresh page faults each time (64 KB made a numpy pass
  over 100k scores 3x slower), hence 1 MB: the hot path's per-query arrays stay below it.
* LanceDB's optimize (compaction, index upkeep, a fresh session) left 11-20 MB freed but resident
  each round; a trim right after it gave all of it back in ~35 ms (bench/results/soak-session9.md),
  so maintenance trims after every optimize as well as every ``storage.malloc_trim_interval_s``.

All of it is best-effort and silent off glibc/Linux; each knob is a ``storage.*`` key.

The process has a ``jemalloc_bg_thd`` thread even with the system pool: ``import pyarrow`` starts it
(libarrow bundles jemalloc with its background purge thread on). With no Arrow buffer in jemalloc it
holds only jemalloc's own metadata.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any

from stratamem.core.telemetry import get_logger

_log = get_logger("storage")

#: glibc's mallopt parameter numbers
_M_ARENA_MAX = -8
_M_MMAP_THRESHOLD = -3


@cache
def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 — glibc only (musl has no malloc_trim)
        return libc
    except (OSError, AttributeError):
        return None


def use_arrow_pool(name: str) -> str:
    """Make ``name`` (``system``, ``jemalloc``, ``mimalloc``; ``default`` = leave it) Arrow's default
    pool; returns the pool in use."""
    import pyarrow as pa

    makers = {
        "system": pa.system_memory_pool,
        "jemalloc": pa.jemalloc_memory_pool,
        "mimalloc": pa.mimalloc_memory_pool,
    }
    if name in makers:
        try:
            pa.set_memory_pool(makers[name]())
        except (NotImplementedError, pa.ArrowNotImplementedError) as exc:
            _log.warning("storage.arrow_pool_unavailable", pool=name, error=str(exc))
    return str(pa.default_memory_pool().backend_name)


def limit_malloc_arenas(n: int) -> bool:
    """Cap glibc's malloc arenas at ``n`` (0 = leave glibc's default). Threads that already own an
    arena keep it, so call this before the storage runtime starts its threads."""
    libc = _libc()
    if n <= 0 or libc is None:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, int(n)))


def set_mmap_threshold(n_bytes: int) -> bool:
    """Allocations of ``n_bytes`` and more get their own mapping (0 = glibc's dynamic default)."""
    libc = _libc()
    if n_bytes <= 0 or libc is None:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, int(n_bytes)))


_trims = 0


def trim() -> bool:
    """Return free pages of every malloc arena to the OS (glibc ``malloc_trim(0)``)."""
    global _trims
    libc = _libc()
    if libc is None:
        return False
    _trims += 1
    return bool(libc.malloc_trim(0))


def trims() -> int:
    """``malloc_trim`` calls made by this process so far (0 off glibc)."""
    return _trims


#: glibc's ``struct mallinfo2``, field by field (all ``size_t``)
_MALLINFO2_FIELDS = (
    "arena",
    "ordblks",
    "smblks",
    "hblks",
    "hblkhd",
    "usmblks",
    "fsmblks",
    "uordblks",
    "fordblks",
    "keepcost",
)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in _MALLINFO2_FIELDS]


def mallinfo2() -> dict[str, int] | None:
    """glibc ``mallinfo2()`` as a dict of its fields (bytes and counts), or None off glibc."""
    libc = _libc()
    fn = getattr(libc, "mallinfo2", None) if libc is not None else None
    if fn is None:
        return None
    fn.restype = _MallInfo2
    info = fn()
    return {name: int(getattr(info, name)) for name in _MALLINFO2_FIELDS}
