"""Where a process's resident memory is, by region (``/proc/self/smaps``) and by allocator
(glibc ``mallinfo2``): what the soak uses to attribute RSS growth that is neither data nor a cache.

Regions: ``heap`` (the main malloc arena, ``[heap]``), ``arenas`` (glibc's other arenas: anonymous
mappings aligned to their 64 MB reservation), ``stacks`` (``[stack]`` and thread stacks: an
anonymous mapping right after a guard page), ``anon_big`` (other anonymous mappings of 1 MB or
more: malloc's own mappings above its mmap threshold, Rust/Arrow allocations), ``anon_small``
(the rest of the anonymous memory) and ``file`` (file-backed pages: code, mmapped data files).
"""

from __future__ import annotations

import sys
from typing import Any

from stratamem.core.storage import allocator

_ARENA_ALIGN = 64 << 20  # glibc HEAP_MAX_SIZE on 64-bit
_MB = 1 << 20


def smaps_regions(path: str = "/proc/self/smaps") -> dict[str, float]:
    """Resident MB per region, plus counts of mappings (``n_*``)."""
    out = dict.fromkeys(("heap", "arenas", "stacks", "anon_big", "anon_small", "file"), 0.0)
    counts = dict.fromkeys(out, 0)
    try:
        text = open(path).read()  # noqa: SIM115 — one read of a proc file
    except OSError:
        return {}
    maps: list[tuple[int, int, str, str, int]] = []  # start, end, perms, name, rss kB
    cur: list[Any] | None = None
    for line in text.splitlines():
        head = line.split(maxsplit=5)
        if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            if cur is not None:
                maps.append(tuple(cur))  # type: ignore[arg-type]
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            cur = [lo, hi, head[1], head[5].strip() if len(head) > 5 else "", 0]
        elif line.startswith("Rss:") and cur is not None:
            cur[4] = int(line.split()[1])
    if cur is not None:
        maps.append(tuple(cur))  # type: ignore[arg-type]
    prev_end, prev_guard = -1, False
    for lo, hi, perms, name, rss in maps:
        guard = perms.startswith("---")
        if name == "[heap]":
            kind = "heap"
        elif name == "[stack]":
            kind = "stacks"
        elif name and not name.startswith("["):
            kind = "file"
        elif name:
            kind = "anon_small"  # [vdso], [vvar], ...
        elif lo % _ARENA_ALIGN == 0 and hi - lo < _ARENA_ALIGN and "rw" in perms:
            kind = "arenas"
        elif prev_guard and prev_end == lo and "rw" in perms and hi - lo <= 16 * _MB:
            kind = "stacks"
        elif hi - lo >= _MB:
            kind = "anon_big"
        else:
            kind = "anon_small"
        out[kind] += rss / 1024
        counts[kind] += 1
        prev_end, prev_guard = hi, guard
    res = {k: round(v, 2) for k, v in out.items()}
    res.update({f"n_{k}": v for k, v in counts.items()})
    return res


def malloc_mb() -> dict[str, Any]:
    """glibc malloc: bytes in use in the arenas, in its own mappings (``mmapped``), and free
    space kept in the arenas (``free``: fragmentation when it grows), in MB."""
    info = allocator.mallinfo2()
    if info is None:
        return {}
    arenas = allocator.malloc_arenas() or []
    return {
        "in_use": round(info["uordblks"] / _MB, 2),
        "mmapped": round(info["hblkhd"] / _MB, 2),
        "n_mmapped": info["hblks"],
        "free": round(info["fordblks"] / _MB, 2),
        "arena_total": round(info["arena"] / _MB, 2),
        "n_free_chunks": info["ordblks"],
        # glibc's arenas (the main one first): how many, and each one's span in MB
        "n_arenas": len(arenas),
        "arena_sizes": [round(a["size"] / _MB, 1) for a in arenas],
        # each arena's bytes in use: after malloc_trim, [heap] RSS less the first is what the
        # trim could not return (soak-session16-native.md)
        "arena_in_use": [round(a["in_use"] / _MB, 1) for a in arenas],
    }


def python_blocks() -> int:
    """Python's allocated memory blocks (flat when no Python object accumulates)."""
    return int(sys.getallocatedblocks())


def python_arenas_mb() -> dict[str, float]:
    """CPython's small-object allocator: MB of its arenas (1 MiB anonymous mappings, counted in
    smaps ``anon_big``) and of the blocks in use inside them; arenas growing while blocks do not
    is fragmentation of Python's own heap. Read from ``sys._debugmallocstats`` (C stderr)."""
    import os
    import tempfile

    fn = getattr(sys, "_debugmallocstats", None)
    if fn is None:
        return {}
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("# arenas allocated current"):
            out["arenas"] = int(line.split("=")[1].replace(",", "").strip())
        elif line.startswith("# bytes in allocated blocks"):
            out["blocks_mb"] = round(int(line.split("=")[1].replace(",", "").strip()) / _MB, 2)
        elif line.startswith("# bytes in available blocks"):
            out["free_mb"] = round(int(line.split("=")[1].replace(",", "").strip()) / _MB, 2)
    if "arenas" in out:
        out["arenas_mb"] = float(out.pop("arenas"))  # 1 MiB each
    return out
