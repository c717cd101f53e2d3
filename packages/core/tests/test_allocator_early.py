"""The malloc arena cap is in force before the engine's threads allocate. Applied when the store
opened, it came after ``import pyarrow`` and ``import lancedb`` and the embedder's threads had made
their own arenas (five in the soak, four in one CLI search), and later threads were spread over
all of them (bench/results/soak-session10.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stratamem.core.config.defaults import DEFAULTS
from stratamem.core.storage import allocator

_SEARCH = """
import sys
from stratamem.core import cli
from stratamem.core.storage import allocator

code = cli.main(["--home", sys.argv[1], "--create", "--offline", "search", "the blue pot"])
print("ARENAS", len(allocator.malloc_arenas() or []), code)
"""


def test_the_command_caps_malloc_arenas_before_the_engine_loads(tmp_path: Path) -> None:
    if allocator.malloc_arenas() is None:
        pytest.skip("glibc only")
    # a fresh process: this one's arenas were made by whatever ran before
    res = subprocess.run(
        [sys.executable, "-c", _SEARCH, str(tmp_path / "home")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    line = [x for x in res.stdout.splitlines() if x.startswith("ARENAS ")]
    assert line, res.stderr[-2000:]
    _, arenas, code = line[-1].split()
    assert code == "0", res.stderr[-2000:]
    # the embedder (tokenizer threads), LanceDB's runtime and the executors all ran
    assert 1 <= int(arenas) <= int(DEFAULTS["storage"]["malloc_arena_max"])


def test_malloc_arenas_lists_the_main_arena_first() -> None:
    arenas = allocator.malloc_arenas()
    if arenas is None:
        pytest.skip("glibc only")
    assert arenas and all(a["size"] > 0 and a["free"] >= 0 for a in arenas)
    assert arenas[0]["free_chunks"] >= 0


def test_malloc_arenas_in_use_adds_up_to_mallinfo2() -> None:
    """Each arena's in-use bytes (span less free chunks, top and fastbins) sum to what mallinfo2
    counts in use: the soak compares the main arena's with its RSS after a trim."""
    arenas = allocator.malloc_arenas()
    info = allocator.mallinfo2()
    if arenas is None or info is None:
        pytest.skip("glibc only")
    assert all(0 < a["in_use"] <= a["size"] for a in arenas[:1])
    total = sum(a["in_use"] for a in arenas)
    # other threads (and malloc_info's own buffer) may allocate between the two reads
    assert abs(total - info["uordblks"]) < 4 << 20, (total, info["uordblks"])
