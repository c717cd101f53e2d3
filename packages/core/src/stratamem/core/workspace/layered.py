"""The layered workspace files: bootstrap, validated list/read/write, chunking and local search.

This is the source of truth every backend builds on; the LanceDB index is only a view of it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from stratamem.core.workspace.atomic import atomic_write_bytes
from stratamem.core.workspace.errors import MemoryBackendError, invalid
from stratamem.core.workspace.layout import STRATAMEM_LAYOUT, WorkspaceLayout
from stratamem.core.workspace.models import (
    MAX_SNIPPET_CHARS,
    MemorySearchResult,
    clamp_search_limit,
)
from stratamem.core.workspace.paths import (
    MAX_FILE_BYTES,
    MEMORY_DREAMS_FILENAME,
    MEMORY_LONG_TERM_FILENAME,
    ensure_inside_workspace,
    is_daily_name,
    resolve_layered_file,
)

SCAFFOLD_HEADINGS = ("## Architecture", "## Conventions", "## Pitfalls", "## Context")


def get_default_memory_scaffold() -> str:
    """Default long-term memory content: a title and the four scaffold sections."""
    body = "\n\n".join(f"{h}\n" for h in SCAFFOLD_HEADINGS)
    return (
        "# Project Memory\n\n"
        "Durable, project-level knowledge for agents working in this repository.\n\n" + body
    )


def get_default_dreams_scaffold() -> str:
    return "# Dreams\n\nSpeculative ideas and open questions worth revisiting.\n"


def get_host_memory_scaffold() -> str:
    """A host workspace's long-term file (no project headings: the host injects it as is)."""
    return "# Memory\n\nDurable facts, preferences and decisions worth keeping across sessions.\n"


def _scaffold(name: str, layout: WorkspaceLayout) -> str:
    if name == MEMORY_DREAMS_FILENAME:
        return get_default_dreams_scaffold()
    if layout == STRATAMEM_LAYOUT:
        return get_default_memory_scaffold()
    return get_host_memory_scaffold()


def ensure_memory_files(root: Path, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> list[str]:
    """Idempotent bootstrap of the layout's files; never overwrites (nor shadows a host alias).

    Returns the created files' canonical paths.
    """
    for directory in layout.dirs():
        ensure_inside_workspace(root, root / directory / MEMORY_LONG_TERM_FILENAME)
        (root / directory).mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    for name in layout.bootstrap:
        target = resolve_layered_file(root, name, layout)
        try:
            with open(target, "x", encoding="utf-8") as handle:  # exclusive: never overwrite
                handle.write(_scaffold(name, layout))
            created.append(layout.relpath(name))
        except FileExistsError:
            continue
    return created


@dataclass(frozen=True, slots=True)
class LayeredFileInfo:
    path: str
    name: str
    size: int
    modified_at: float
    kind: str  # long_term | dreams | daily


def _kind(name: str) -> str:
    if name == MEMORY_LONG_TERM_FILENAME:
        return "long_term"
    if name == MEMORY_DREAMS_FILENAME:
        return "dreams"
    return "daily"


def _info(root: Path, target: Path, name: str, layout: WorkspaceLayout) -> LayeredFileInfo | None:
    try:
        ensure_inside_workspace(root, target)
    except Exception:
        return None
    if not target.is_file():
        return None
    st = target.stat()
    return LayeredFileInfo(layout.relpath(name), name, st.st_size, st.st_mtime, _kind(name))


def list_memory_files(
    root: Path, layout: WorkspaceLayout = STRATAMEM_LAYOUT
) -> list[LayeredFileInfo]:
    """The layered files present in the workspace (other files are ignored), long-term first."""
    infos: list[LayeredFileInfo] = []
    for name in (MEMORY_LONG_TERM_FILENAME, MEMORY_DREAMS_FILENAME):
        try:
            target = resolve_layered_file(root, name, layout)
        except Exception:
            continue
        info = _info(root, target, name, layout)
        if info is not None:
            infos.append(info)
    daily = root / layout.daily_dir if layout.daily_dir else root
    if daily.is_dir() and not daily.is_symlink():  # each entry is checked again below
        for entry in daily.iterdir():
            if is_daily_name(entry.name):
                info = _info(root, entry, entry.name, layout)
                if info is not None:
                    infos.append(info)
    order = {"long_term": 0, "dreams": 1, "daily": 2}
    infos.sort(key=lambda i: (order[i.kind], [-ord(c) for c in i.name]))
    return infos


def layered_fingerprint(root: Path, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> str:
    """Changes when a layered file appears, disappears or is rewritten (a host edits them too)."""
    digest = hashlib.sha256()
    for info in list_memory_files(root, layout):
        digest.update(f"{info.path}\0{info.size}\0{info.modified_at!r}\n".encode())
    return digest.hexdigest()[:32]


def decode_content(content: str | bytes, backend: str = "file") -> bytes:
    """UTF-8 bytes of ``content`` after validation (type, encoding, 1 MB cap)."""
    if isinstance(content, bytes):
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise invalid("memory content must be valid UTF-8", position=exc.start) from None
        data = content
    elif isinstance(content, str):
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise invalid("memory content must be valid UTF-8", position=exc.start) from None
    else:
        raise invalid("memory content must be a string", got=type(content).__name__)
    if len(data) > MAX_FILE_BYTES:
        raise MemoryBackendError(
            "QUOTA_EXCEEDED",
            backend,
            "memory file exceeds 1 MB",
            {"bytes": len(data), "max_bytes": MAX_FILE_BYTES},
        )
    return data


def read_memory_file(
    root: Path, path: str, backend: str = "file", layout: WorkspaceLayout = STRATAMEM_LAYOUT
) -> str | None:
    """Content of a validated layered file, ``None`` when it does not exist."""
    target = resolve_layered_file(root, path, layout)
    if not target.exists():
        return None
    try:
        size = target.stat().st_size
        if size > MAX_FILE_BYTES:
            raise MemoryBackendError(
                "QUOTA_EXCEEDED", backend, "memory file exceeds 1 MB", {"bytes": size}
            )
        data = target.read_bytes()
    except MemoryBackendError:
        raise
    except OSError as exc:
        raise MemoryBackendError("READ_FAILED", backend, str(exc)) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryBackendError(
            "READ_FAILED", backend, "memory file is not valid UTF-8", {"position": exc.start}
        ) from None


def write_memory_file(
    root: Path,
    path: str,
    content: str | bytes,
    backend: str = "file",
    layout: WorkspaceLayout = STRATAMEM_LAYOUT,
) -> int:
    """Validate everything first, then replace the file atomically. Returns bytes written."""
    target = resolve_layered_file(root, path, layout)
    data = decode_content(content, backend)
    try:
        atomic_write_bytes(target, data)
    except OSError as exc:
        raise MemoryBackendError("WRITE_FAILED", backend, str(exc)) from exc
    return len(data)


# -- chunking and local search -------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Chunk:
    path: str
    heading: str
    start_line: int
    end_line: int
    text: str


def chunk_markdown(path: str, content: str, max_chars: int = MAX_SNIPPET_CHARS) -> list[Chunk]:
    """Split by heading, then by blank-line paragraph; long paragraphs are cut at ``max_chars``."""
    chunks: list[Chunk] = []
    heading = ""
    para: list[str] = []
    para_start = 0

    def flush(end_line: int) -> None:
        nonlocal para
        text = "\n".join(para).strip()
        if text:
            start = para_start
            while text:
                piece, text = text[:max_chars], text[max_chars:]
                chunks.append(Chunk(path, heading, start, end_line, piece))
        para = []

    for number, line in enumerate(content.splitlines(), start=1):
        m = _HEADING.match(line)
        if m:
            flush(number - 1)
            heading = m.group(2)
            continue
        if not line.strip():
            flush(number - 1)
            continue
        if not para:
            para_start = number
        para.append(line)
    flush(len(content.splitlines()))
    return chunks


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def layered_chunks(root: Path, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> list[Chunk]:
    out: list[Chunk] = []
    for info in list_memory_files(root, layout):
        try:
            content = read_memory_file(root, info.name, layout=layout)
        except Exception:
            continue
        if content:
            out.extend(chunk_markdown(info.path, content))
    return out


def keyword_score(query_tokens: list[str], text: str, heading: str = "") -> float:
    """Share of distinct query tokens found in the chunk (heading counts), in [0, 1]."""
    wanted = set(query_tokens)
    if not wanted:
        return 0.0
    have = set(tokens(text)) | set(tokens(heading))
    return len(wanted & have) / len(wanted)


def search_layered_files(
    root: Path, query: str, limit: int | None = None, layout: WorkspaceLayout = STRATAMEM_LAYOUT
) -> list[MemorySearchResult]:
    """Local keyword search over the layered files; bounded snippets with file, lines and score."""
    if not isinstance(query, str):
        raise invalid("search query must be a string")
    k = clamp_search_limit(limit)
    q = tokens(query)
    if not q:
        return []
    scored: list[tuple[float, Chunk]] = []
    for chunk in layered_chunks(root, layout):
        score = keyword_score(q, chunk.text, chunk.heading)
        if score > 0:
            scored.append((score, chunk))
    scored.sort(key=lambda sc: (-sc[0], sc[1].path, sc[1].start_line))
    return [
        MemorySearchResult(
            path=c.path,
            start_line=c.start_line,
            end_line=c.end_line,
            snippet=c.text[:MAX_SNIPPET_CHARS],
            score=round(s, 6),
            heading=c.heading,
            source="local",
        )
        for s, c in scored[:k]
    ]


def today() -> dt.date:
    return dt.date.today()
