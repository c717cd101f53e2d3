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
import re
import sys
from collections.abc import Mapping
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


def prepare_process(storage: Mapping[str, Any] | None = None) -> bool:
    """Apply ``storage.malloc_arena_max`` and ``storage.malloc_mmap_threshold_kb`` (the defaults
    table's values unless ``storage`` gives them) before the engine's threads allocate.

    glibc gives a thread an arena at its first ``malloc`` and the thread keeps it; arenas made
    before the cap stay in the pool later threads are spread over (and glibc keeps the first cap
    it applies). ``import pyarrow`` (jemalloc's purge thread) and ``import lancedb`` each make
    one, the start-up executor and the embedder's tokenizer threads more: five arenas in the soak
    with the cap applied at the store's open (soak-session10.md). So the
    ``stratamem`` command and the bench call this before importing either, and
    ``open_local_core`` before its threads start (a host that imported them first keeps theirs).
    Idempotent; the store's open applies the home's values again."""
    if storage is None:
        from stratamem.core.config.defaults import DEFAULTS

        storage = DEFAULTS["storage"]
    capped = limit_malloc_arenas(int(storage["malloc_arena_max"]))
    set_mmap_threshold(int(storage["malloc_mmap_threshold_kb"]) * 1024)
    return capped


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


def _malloc_info() -> str | None:
    """glibc ``malloc_info(0, …)``'s XML, or None off glibc."""
    libc = _libc()
    if libc is None or not hasattr(libc, "open_memstream"):
        return None
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_size_t),
    ]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.free.argtypes = [ctypes.c_void_p]
    buf, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not stream:
        return None
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    try:
        return ctypes.string_at(buf, size.value).decode(errors="replace")
    finally:
        libc.free(ctypes.cast(buf, ctypes.c_void_p))


_HEAP = re.compile(r'<heap nr="(\d+)">(.*?)</heap>', re.S)
_REST = re.compile(r'<total type="rest" count="(\d+)" size="(\d+)"/>')
_FAST = re.compile(r'<total type="fast" count="(\d+)" size="(\d+)"/>')
_CURRENT = re.compile(r'<system type="current" size="(\d+)"/>')


def malloc_arenas() -> list[dict[str, int]] | None:
    """glibc's arenas, one dict each: ``size`` (bytes the arena spans), ``free`` (bytes in its
    free chunks and top), ``free_chunks``, ``fast`` (bytes in its fastbins) and ``in_use`` (the
    rest: what ``mallinfo2`` counts in use, arena by arena); None off glibc. The first is the
    main arena. After ``malloc_trim`` an arena's RSS less its ``in_use`` is the fragmentation the
    trim could not return (bench/results/soak-session16-native.md)."""
    text = _malloc_info()
    if text is None:
        return None
    out = []
    for m in _HEAP.finditer(text):
        body = m.group(2)
        rest, cur, fast = _REST.search(body), _CURRENT.search(body), _FAST.search(body)
        size = int(cur.group(1)) if cur else 0
        free = int(rest.group(2)) if rest else 0
        in_fast = int(fast.group(2)) if fast else 0
        out.append(
            {
                "size": size,
                "free": free,
                "free_chunks": int(rest.group(1)) if rest else 0,
                "fast": in_fast,
                "in_use": max(0, size - free - in_fast),
            }
        )
    return out
