"""The recall store: SQLite (WAL) per project; de-duplicating appends, removes and replaces are
serialised per (project, kind).

A per-(project, kind) lock (thread lock + ``flock``, so other processes too) covers the candidate
lookup and the write; the UNIQUE (project_id, kind, content_hash) constraint is only the exact-hash
backstop, hit with ``ON CONFLICT DO NOTHING`` so it never aborts the write path.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace as with_fields
from pathlib import Path
from typing import Any

from stratamem.core.workspace.errors import MemoryBackendError, invalid
from stratamem.core.workspace.recall.models import (
    RECALL_KINDS,
    RecallAppendResult,
    RecallRecord,
    RecallReplaceResult,
    RecallSearchResult,
    RecallVectorSearchProvider,
)
from stratamem.core.workspace.recall.normalize import (
    content_hash,
    jaccard,
    normalize_recall_content,
    recall_tokens,
)
from stratamem.core.workspace.recall.search import rank_candidates

#: how many of the most recent same-kind records the near-duplicate classifier looks at
DUPLICATE_WINDOW = 200
JACCARD_THRESHOLD = 0.9
MAX_CONTENT_CHARS = 16_384
MAX_TAGS = 32
MAX_TAG_CHARS = 64

_SCHEMA = """
CREATE TABLE IF NOT EXISTS recall_records (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('decision', 'preference', 'solution')),
    content TEXT NOT NULL,
    normalized TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    task_id TEXT,
    agent_id TEXT,
    session_id TEXT,
    origin TEXT,
    kg_node_ids TEXT NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT recall_records_project_kind_hash_key UNIQUE (project_id, kind, content_hash)
);
CREATE INDEX IF NOT EXISTS recall_records_recent
    ON recall_records (project_id, kind, created_at DESC);
"""

_COLUMNS = (
    "id, project_id, kind, content, content_hash, tags, task_id, agent_id, session_id, origin,"
    " kg_node_ids, created_at, updated_at"
)

_SOURCE_FIELDS = ("task_id", "agent_id", "session_id", "origin")

_thread_locks: dict[tuple[str, str], threading.Lock] = {}
_thread_locks_guard = threading.Lock()


def _thread_lock(key: tuple[str, str]) -> threading.Lock:
    with _thread_locks_guard:
        return _thread_locks.setdefault(key, threading.Lock())


def _row(row: Sequence[Any]) -> RecallRecord:
    return RecallRecord(
        id=row[0],
        project_id=row[1],
        kind=row[2],
        content=row[3],
        content_hash=row[4],
        tags=tuple(json.loads(row[5])),
        task_id=row[6],
        agent_id=row[7],
        session_id=row[8],
        origin=row[9],
        kg_node_ids=tuple(json.loads(row[10])),
        created_at=int(row[11]),
        updated_at=int(row[12]),
    )


def _opt_str(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 256:
        raise invalid(f"{name} must be a string of at most 256 characters", field=name)
    return value


def _str_list(
    name: str, values: Any, max_items: int, max_chars: int, lower: bool
) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise invalid(f"{name} must be a list of strings", field=name)
    out: list[str] = []
    for v in values:
        if not isinstance(v, str):
            raise invalid(f"{name} must be a list of strings", field=name)
        v = " ".join(v.split())
        v = v.lower() if lower else v
        if not v:
            continue
        if len(v) > max_chars:
            raise invalid(f"{name} entries must be at most {max_chars} characters", field=name)
        if v not in out:
            out.append(v)
    if len(out) > max_items:
        raise invalid(f"at most {max_items} {name}", field=name)
    return tuple(out)


def _check_kind(kind: Any) -> None:
    if kind not in RECALL_KINDS:
        raise invalid("recall kind must be decision, preference or solution", kind=str(kind))


def _checked_content(content: Any) -> tuple[str, frozenset[str]]:
    """The normalised text and its tokens; ``invalid_argument`` for content append would refuse."""
    if not isinstance(content, str):
        raise invalid("recall content must be a string")
    if len(content) > MAX_CONTENT_CHARS:
        raise invalid(f"recall content exceeds {MAX_CONTENT_CHARS} characters")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid("recall content must be valid UTF-8") from None
    normalized = normalize_recall_content(content)
    toks = recall_tokens(normalized)
    if not normalized or not toks:
        raise invalid("recall content must contain words")
    return normalized, toks


def _provenance(source: Mapping[str, Any] | None) -> dict[str, str | None]:
    src = dict(source or {})
    unknown = set(src) - set(_SOURCE_FIELDS)
    if unknown:
        raise invalid("unknown source fields", fields=sorted(unknown))
    return {k: _opt_str(k, src.get(k)) for k in _SOURCE_FIELDS}


def _checked_match(match: Any) -> str:
    if not isinstance(match, str) or not match.strip():
        raise invalid("recall match must be a record id or the record's text", field="match")
    if len(match) > MAX_CONTENT_CHARS:
        raise invalid(f"recall match exceeds {MAX_CONTENT_CHARS} characters", field="match")
    return match


class RecallStore:
    """One project's recall records in ``<dir>/recall.sqlite3``."""

    def __init__(
        self, directory: Path, project_id: str, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.dir = directory
        self.project_id = project_id
        self.path = directory / "recall.sqlite3"
        self._clock = clock
        self.dir.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(self._connect()) as conn:
            conn.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @contextlib.contextmanager
    def _kind_lock(self, kind: str) -> Iterator[None]:
        """Serialises one (project, kind) across threads and processes; other kinds never wait."""
        with _thread_lock((str(self.path), kind)):
            lock_path = self.dir / f"recall-{kind}.lock"
            with open(lock_path, "a+b") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def append(
        self,
        kind: str,
        content: str,
        *,
        tags: Sequence[str] | None = None,
        source: Mapping[str, Any] | None = None,
        kg_node_ids: Sequence[str] | None = None,
    ) -> RecallAppendResult:
        """Store a record unless an exact-normalised or Jaccard ≥ 0.9 twin is among the 200 most
        recent same-kind records (or an older exact twin exists); bad input changes nothing."""
        _check_kind(kind)
        normalized, toks = _checked_content(content)
        tag_list = _str_list("tags", tags, MAX_TAGS, MAX_TAG_CHARS, lower=True)
        node_ids = _str_list("kg_node_ids", kg_node_ids, 256, 256, lower=False)
        provenance = _provenance(source)
        digest = content_hash(normalized)

        with self._kind_lock(kind), contextlib.closing(self._connect()) as conn:
            recent = conn.execute(
                f"SELECT {_COLUMNS}, normalized FROM recall_records"
                " WHERE project_id = ? AND kind = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (self.project_id, kind, DUPLICATE_WINDOW),
            ).fetchall()
            for row in recent:
                if row[4] == digest:
                    return RecallAppendResult(False, _row(row), "exact", 1.0)
            best: tuple[float, Sequence[Any]] | None = None
            for row in recent:
                sim = jaccard(toks, recall_tokens(row[13]))
                if sim >= JACCARD_THRESHOLD and (best is None or sim > best[0]):
                    best = (sim, row)
            if best is not None:
                return RecallAppendResult(False, _row(best[1]), "similar", round(best[0], 6))
            now = int(self._clock() * 1000)
            record = RecallRecord(
                id=f"rc_{uuid.uuid4().hex}",
                project_id=self.project_id,
                kind=kind,
                content=content.strip(),
                content_hash=digest,
                tags=tag_list,
                kg_node_ids=node_ids,
                created_at=now,
                updated_at=now,
                **provenance,
            )
            try:
                conn.execute("BEGIN")
                cur = conn.execute(
                    "INSERT INTO recall_records (id, project_id, kind, content, normalized,"
                    " content_hash, tags, task_id, agent_id, session_id, origin, kg_node_ids,"
                    " created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                    " ON CONFLICT (project_id, kind, content_hash) DO NOTHING",
                    (
                        record.id,
                        self.project_id,
                        kind,
                        record.content,
                        normalized,
                        digest,
                        json.dumps(list(tag_list)),
                        record.task_id,
                        record.agent_id,
                        record.session_id,
                        record.origin,
                        json.dumps(list(node_ids)),
                        now,
                        now,
                    ),
                )
                if cur.rowcount == 0:  # exact twin outside the window (or a bypassing importer)
                    twin = conn.execute(
                        f"SELECT {_COLUMNS} FROM recall_records"
                        " WHERE project_id = ? AND kind = ? AND content_hash = ?",
                        (self.project_id, kind, digest),
                    ).fetchone()
                    conn.execute("COMMIT")
                    return RecallAppendResult(False, _row(twin), "exact", 1.0)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise MemoryBackendError("WRITE_FAILED", "recall", str(exc)) from exc
            return RecallAppendResult(True, record)

    def _find(self, conn: sqlite3.Connection, kind: str, match: str) -> Sequence[Any] | None:
        """The record of ``kind`` whose id is ``match``, else whose normalised text equals it."""
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM recall_records WHERE project_id = ? AND kind = ? AND id = ?",
            (self.project_id, kind, match),
        ).fetchone()
        normalized = normalize_recall_content(match)
        if row is None and normalized:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM recall_records"
                " WHERE project_id = ? AND kind = ? AND content_hash = ?",
                (self.project_id, kind, content_hash(normalized)),
            ).fetchone()
        return row  # type: ignore[no-any-return]

    def _not_found(self, kind: str, match: str) -> MemoryBackendError:
        return MemoryBackendError(
            "NOT_FOUND",
            "recall",
            f"no {kind} recall record has that id or text",
            {"kind": kind, "match": match[:256]},
        )

    def remove(self, kind: str, match: str) -> RecallRecord:
        """Delete the ``kind`` record matched by id or exact normalised text and return it;
        ``not_found`` (nothing changes) when none matches."""
        _check_kind(kind)
        _checked_match(match)
        with self._kind_lock(kind), contextlib.closing(self._connect()) as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
                row = self._find(conn, kind, match)
                if row is not None:
                    conn.execute("DELETE FROM recall_records WHERE id = ?", (row[0],))
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise MemoryBackendError("WRITE_FAILED", "recall", str(exc)) from exc
        if row is None:
            raise self._not_found(kind, match)
        return _row(row)

    def replace(
        self,
        kind: str,
        match: str,
        content: str,
        *,
        tags: Sequence[str] | None = None,
        source: Mapping[str, Any] | None = None,
        kg_node_ids: Sequence[str] | None = None,
    ) -> RecallReplaceResult:
        """Give the matched record (by id or exact normalised text) new content, keeping its id and
        creation time; ``tags``/``source``/``kg_node_ids`` replace the old values when given.

        If another record already holds the new content (exact normalised), the matched record is
        removed instead, so no exact duplicate is ever left. A near (Jaccard) twin is kept: a
        replace is an explicit edit. ``not_found`` / ``invalid_argument`` change nothing.
        """
        _check_kind(kind)
        _checked_match(match)
        normalized, _ = _checked_content(content)
        tag_list = None if tags is None else _str_list("tags", tags, MAX_TAGS, MAX_TAG_CHARS, True)
        node_ids = (
            None if kg_node_ids is None else _str_list("kg_node_ids", kg_node_ids, 256, 256, False)
        )
        provenance = None if source is None else _provenance(source)
        digest = content_hash(normalized)
        with self._kind_lock(kind), contextlib.closing(self._connect()) as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
                row = self._find(conn, kind, match)
                if row is None:
                    conn.execute("ROLLBACK")
                    raise self._not_found(kind, match)
                previous = _row(row)
                twin = conn.execute(
                    f"SELECT {_COLUMNS} FROM recall_records"
                    " WHERE project_id = ? AND kind = ? AND content_hash = ? AND id != ?",
                    (self.project_id, kind, digest, previous.id),
                ).fetchone()
                if twin is not None:
                    conn.execute("DELETE FROM recall_records WHERE id = ?", (previous.id,))
                    conn.execute("COMMIT")
                    return RecallReplaceResult(_row(twin), previous, merged=True)
                fields = {
                    "content": content.strip(),
                    "content_hash": digest,
                    "tags": previous.tags if tag_list is None else tag_list,
                    "kg_node_ids": previous.kg_node_ids if node_ids is None else node_ids,
                    "updated_at": max(int(self._clock() * 1000), previous.updated_at),
                    **(provenance or {}),
                }
                record = with_fields(previous, **fields)  # type: ignore[arg-type]
                conn.execute(
                    "UPDATE recall_records SET content = ?, normalized = ?, content_hash = ?,"
                    " tags = ?, task_id = ?, agent_id = ?, session_id = ?, origin = ?,"
                    " kg_node_ids = ?, updated_at = ? WHERE id = ?",
                    (
                        record.content,
                        normalized,
                        digest,
                        json.dumps(list(record.tags)),
                        record.task_id,
                        record.agent_id,
                        record.session_id,
                        record.origin,
                        json.dumps(list(record.kg_node_ids)),
                        record.updated_at,
                        record.id,
                    ),
                )
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise MemoryBackendError("WRITE_FAILED", "recall", str(exc)) from exc
        return RecallReplaceResult(record, previous)

    def import_record(self, record: RecallRecord, normalized: str | None = None) -> bool:
        """Bulk-import path that bypasses the classifier; only the constraint guards it."""
        norm = normalized if normalized is not None else normalize_recall_content(record.content)
        with contextlib.closing(self._connect()) as conn:
            cur = conn.execute(
                "INSERT INTO recall_records (id, project_id, kind, content, normalized, content_hash,"
                " tags, task_id, agent_id, session_id, origin, kg_node_ids, created_at, updated_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (project_id, kind, content_hash) DO NOTHING",
                (
                    record.id,
                    self.project_id,
                    record.kind,
                    record.content,
                    norm,
                    content_hash(norm),
                    json.dumps(list(record.tags)),
                    record.task_id,
                    record.agent_id,
                    record.session_id,
                    record.origin,
                    json.dumps(list(record.kg_node_ids)),
                    record.created_at,
                    record.updated_at,
                ),
            )
            return cur.rowcount == 1

    def candidates(
        self, kinds: Sequence[str] | None = None, tags: Sequence[str] | None = None
    ) -> list[RecallRecord]:
        """This project's records, filtered by kind (any of) and tags (all of), newest first."""
        kind_list = list(kinds or [])
        for k in kind_list:
            if k not in RECALL_KINDS:
                raise invalid("recall kind must be decision, preference or solution", kind=str(k))
        wanted = set(_str_list("tags", tags, MAX_TAGS, MAX_TAG_CHARS, lower=True))
        sql = f"SELECT {_COLUMNS} FROM recall_records WHERE project_id = ?"
        params: list[Any] = [self.project_id]
        if kind_list:
            sql += f" AND kind IN ({','.join('?' * len(kind_list))})"
            params.extend(kind_list)
        sql += " ORDER BY created_at DESC, rowid DESC"
        with contextlib.closing(self._connect()) as conn:
            rows = [_row(r) for r in conn.execute(sql, params).fetchall()]
        return [r for r in rows if wanted <= set(r.tags)]

    def search(
        self,
        query: str = "",
        *,
        kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        limit: Any = None,
        vector_provider: RecallVectorSearchProvider | None = None,
    ) -> RecallSearchResult:
        """Keyword (or per-call vector-ranked) search over the scoped, filtered candidates."""
        if not isinstance(query, str):
            raise invalid("recall query must be a string")
        return rank_candidates(query, self.candidates(kinds, tags), limit, vector_provider)

    def count(self, kind: str | None = None) -> int:
        with contextlib.closing(self._connect()) as conn:
            if kind is None:
                sql, params = (
                    "SELECT COUNT(*) FROM recall_records WHERE project_id = ?",
                    [self.project_id],
                )
            else:
                sql = "SELECT COUNT(*) FROM recall_records WHERE project_id = ? AND kind = ?"
                params = [self.project_id, kind]
            return int(conn.execute(sql, params).fetchone()[0])
