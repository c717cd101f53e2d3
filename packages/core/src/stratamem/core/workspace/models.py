"""The backend contract's value types and the ``MemoryBackend`` protocol (seed §3.1).

Every method takes the project root; there are no lifecycle methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

DEFAULT_SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 50
#: a search result never carries more than this many characters of text
MAX_SNIPPET_CHARS = 700


@dataclass(frozen=True, slots=True)
class MemoryBackendCapabilities:
    readable: bool
    writable: bool
    supports_atomic_write: bool
    has_conflict_resolution: bool
    persistent: bool


@dataclass(frozen=True, slots=True)
class MemoryReadResult:
    content: str
    exists: bool
    path: str
    backend: str


@dataclass(frozen=True, slots=True)
class MemoryWriteResult:
    success: bool
    path: str
    bytes_written: int
    backend: str


@dataclass(frozen=True, slots=True)
class MemoryGetOptions:
    path: str = "MEMORY.md"
    start_line: int | None = None
    line_count: int | None = None


@dataclass(frozen=True, slots=True)
class MemoryGetResult:
    path: str
    content: str
    start_line: int
    end_line: int
    total_lines: int


@dataclass(frozen=True, slots=True)
class MemorySearchOptions:
    query: str
    limit: int = DEFAULT_SEARCH_LIMIT


@dataclass(frozen=True, slots=True)
class MemorySearchResult:
    path: str
    start_line: int
    end_line: int
    snippet: str
    score: float
    heading: str = ""
    source: str = "local"


@dataclass(frozen=True, slots=True)
class MemoryBackendConfig:
    type: str
    options: dict[str, object] = field(default_factory=dict)


@runtime_checkable
class MemoryBackend(Protocol):
    """A workspace memory backend. ``get``/``search``/``exists`` are optional (may be absent)."""

    @property
    def type(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> MemoryBackendCapabilities: ...

    def read(self, root: Path) -> MemoryReadResult: ...

    def write(self, root: Path, content: str) -> MemoryWriteResult: ...


def clamp_search_limit(limit: int | None) -> int:
    """One clamp for every workspace search path: default 10, at least 1, at most 50."""
    if limit is None or isinstance(limit, bool):
        return DEFAULT_SEARCH_LIMIT
    try:
        value = int(limit)
    except (TypeError, ValueError):
        return DEFAULT_SEARCH_LIMIT
    if value <= 0:
        return DEFAULT_SEARCH_LIMIT
    return min(value, MAX_SEARCH_LIMIT)
