"""SQLite (stdlib, WAL) for small transactional state and the capture journal.

Migrations are additive and numbered; each runs once inside a transaction and is recorded in
``schema_migrations``. ``synchronous=FULL`` makes every commit fsync the WAL: a turn acknowledged by
``turn_end`` survives a crash.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from stratamem.contract.dtos import Namespace
from stratamem.core.ids import now_ms

T = TypeVar("T")

OWNER_COLS = "owner_agent_kind TEXT NOT NULL DEFAULT 'unknown', owner_profile_id TEXT NOT NULL DEFAULT 'default', owner_workspace_id TEXT"

#: the UTC day an episode's traces count on in ``namespace_days`` (the day the episode started)
_DAY = "strftime('%Y-%m-%d', {row}.started_at / 1000, 'unixepoch')"

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "initial",
        f"""
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY, agent TEXT NOT NULL, {OWNER_COLS},
            started_at INTEGER NOT NULL, last_seen_at INTEGER NOT NULL, closed_at INTEGER,
            meta_json TEXT NOT NULL DEFAULT '{{}}',
            last_turn_key TEXT, last_turn_text TEXT, last_turn_episode TEXT
        ) STRICT;
        CREATE TABLE episodes (
            id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            {OWNER_COLS}, share_scope TEXT NOT NULL DEFAULT 'private',
            started_at INTEGER NOT NULL, ended_at INTEGER, status TEXT NOT NULL DEFAULT 'open',
            trace_ids_json TEXT NOT NULL DEFAULT '[]', r_task REAL,
            meta_json TEXT NOT NULL DEFAULT '{{}}', last_turn_ts INTEGER
        ) STRICT;
        CREATE INDEX episodes_session ON episodes(session_id, started_at);
        CREATE INDEX episodes_status ON episodes(status);
        CREATE TABLE episode_turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            episode_id TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
            role TEXT NOT NULL, content TEXT NOT NULL, ts INTEGER NOT NULL,
            meta_json TEXT NOT NULL DEFAULT '{{}}'
        ) STRICT;
        CREATE INDEX episode_turns_ep ON episode_turns(episode_id, id);
        CREATE TABLE feedback (
            id TEXT PRIMARY KEY, {OWNER_COLS}, ts INTEGER NOT NULL, episode_id TEXT, trace_id TEXT,
            channel TEXT NOT NULL, polarity TEXT NOT NULL, magnitude REAL NOT NULL DEFAULT 0,
            rationale TEXT, raw_json TEXT
        ) STRICT;
        CREATE INDEX feedback_trace ON feedback(trace_id);
        CREATE TABLE kv (key TEXT PRIMARY KEY, value_json TEXT NOT NULL, updated_at INTEGER NOT NULL) STRICT;
        CREATE TABLE audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT, {OWNER_COLS}, ts INTEGER NOT NULL,
            actor TEXT NOT NULL, kind TEXT NOT NULL, target TEXT, detail_json TEXT
        ) STRICT;
        CREATE TABLE embedding_retry_queue (
            id INTEGER PRIMARY KEY AUTOINCREMENT, target_kind TEXT NOT NULL, target_id TEXT NOT NULL,
            vector_field TEXT NOT NULL, source_text TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL DEFAULT 6, next_attempt_at INTEGER NOT NULL DEFAULT 0,
            last_error TEXT, UNIQUE(target_kind, target_id, vector_field)
        ) STRICT;
        CREATE TABLE journal (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, target_id TEXT NOT NULL,
            session_id TEXT, episode_id TEXT, turn_key TEXT, payload_json TEXT NOT NULL,
            created_at INTEGER NOT NULL, applied_at INTEGER, attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        ) STRICT;
        CREATE INDEX journal_pending ON journal(applied_at, seq);
        CREATE UNIQUE INDEX journal_turn_key ON journal(session_id, turn_key)
            WHERE turn_key IS NOT NULL;
        CREATE INDEX journal_target ON journal(target_id);
        """,
    ),
    (
        2,
        "learning",
        """
        CREATE TABLE l2_candidate_pool (
            signature TEXT NOT NULL, trace_id TEXT NOT NULL, episode_id TEXT NOT NULL,
            value REAL NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
            promoted_policy_id TEXT, PRIMARY KEY (signature, trace_id)
        ) STRICT;
        CREATE INDEX l2_pool_open ON l2_candidate_pool(promoted_policy_id, expires_at);
        CREATE TABLE trace_policy_links (
            trace_id TEXT NOT NULL, policy_id TEXT NOT NULL, episode_id TEXT NOT NULL,
            score REAL NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
            PRIMARY KEY (trace_id, policy_id)
        ) STRICT;
        CREATE INDEX trace_policy_links_policy ON trace_policy_links(policy_id);
        CREATE TABLE skill_trials (
            id TEXT PRIMARY KEY, skill_id TEXT NOT NULL, session_id TEXT, episode_id TEXT,
            trace_id TEXT, status TEXT NOT NULL DEFAULT 'pending', created_at INTEGER NOT NULL,
            resolved_at INTEGER, reward REAL
        ) STRICT;
        CREATE INDEX skill_trials_episode ON skill_trials(episode_id, status);
        CREATE TABLE decision_repairs (
            id TEXT PRIMARY KEY, context_hash TEXT NOT NULL, session_id TEXT, tool TEXT NOT NULL,
            preference TEXT NOT NULL, anti_pattern TEXT NOT NULL, severity TEXT NOT NULL,
            confidence REAL NOT NULL, source TEXT NOT NULL, policy_ids_json TEXT NOT NULL DEFAULT '[]',
            created_at INTEGER NOT NULL, delivered_at INTEGER
        ) STRICT;
        CREATE INDEX decision_repairs_ctx ON decision_repairs(context_hash, created_at);
        CREATE INDEX decision_repairs_session ON decision_repairs(session_id, delivered_at)
        """,
    ),
    (
        3,
        "journal dead letter and turn-key index",
        """
        ALTER TABLE journal ADD COLUMN set_aside_at INTEGER;
        ALTER TABLE journal ADD COLUMN content_hash TEXT;
        CREATE INDEX journal_set_aside ON journal(set_aside_at) WHERE set_aside_at IS NOT NULL;
        CREATE TABLE turn_keys (
            session_id TEXT NOT NULL, turn_key TEXT NOT NULL, target_id TEXT NOT NULL,
            episode_id TEXT, seq INTEGER NOT NULL, content_hash TEXT, created_at INTEGER NOT NULL,
            PRIMARY KEY (session_id, turn_key)
        ) STRICT, WITHOUT ROWID
        """,
    ),
    (
        4,
        "namespace figures kept current by triggers on episodes",
        f"""
        CREATE TABLE namespace_days (
            owner_agent_kind TEXT NOT NULL, owner_profile_id TEXT NOT NULL, day TEXT NOT NULL,
            traces INTEGER NOT NULL DEFAULT 0, episodes INTEGER NOT NULL DEFAULT 0,
            last_ts INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (owner_agent_kind, owner_profile_id, day)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO namespace_days(owner_agent_kind, owner_profile_id, day, traces, episodes, last_ts)
            SELECT owner_agent_kind, owner_profile_id, {_DAY.format(row="episodes")},
                SUM(json_array_length(trace_ids_json)), COUNT(*),
                MAX(COALESCE(last_turn_ts, started_at))
            FROM episodes GROUP BY 1, 2, 3;
        CREATE TRIGGER namespace_days_episode_added AFTER INSERT ON episodes BEGIN
            INSERT INTO namespace_days(owner_agent_kind, owner_profile_id, day, traces, episodes, last_ts)
            VALUES (NEW.owner_agent_kind, NEW.owner_profile_id, {_DAY.format(row="NEW")},
                json_array_length(NEW.trace_ids_json), 1, COALESCE(NEW.last_turn_ts, NEW.started_at))
            ON CONFLICT (owner_agent_kind, owner_profile_id, day) DO UPDATE SET
                traces = traces + excluded.traces, episodes = episodes + 1,
                last_ts = MAX(last_ts, excluded.last_ts);
        END;
        CREATE TRIGGER namespace_days_episode_changed
            AFTER UPDATE OF trace_ids_json, last_turn_ts ON episodes BEGIN
            UPDATE namespace_days SET
                traces = traces + json_array_length(NEW.trace_ids_json)
                    - json_array_length(OLD.trace_ids_json),
                last_ts = MAX(last_ts, COALESCE(NEW.last_turn_ts, NEW.started_at))
            WHERE owner_agent_kind = OLD.owner_agent_kind AND owner_profile_id = OLD.owner_profile_id
                AND day = {_DAY.format(row="OLD")};
        END;
        CREATE TRIGGER namespace_days_episode_removed AFTER DELETE ON episodes BEGIN
            UPDATE namespace_days SET
                traces = traces - json_array_length(OLD.trace_ids_json), episodes = episodes - 1
            WHERE owner_agent_kind = OLD.owner_agent_kind AND owner_profile_id = OLD.owner_profile_id
                AND day = {_DAY.format(row="OLD")};
        END
        """,
    ),
    (
        5,
        "episode listing in (started_at, id) order",
        # ``list_episodes`` pages newest first in the total order (started_at DESC, id DESC), by
        # keyset cursor or offset. Without these a page sorted every visible episode (SCAN + temp
        # B-tree) and an offset re-sorted them all again. Each index walks that order backwards
        # after its equality column (none / status / session); the owner columns ride along so
        # ``Scope.visible``'s OR filter is checked in the index, without reading the row of
        # another namespace's episode (bench/results/episodes-paging.md).
        """
        CREATE INDEX episodes_recent
            ON episodes(started_at, id, owner_agent_kind, owner_profile_id, share_scope);
        CREATE INDEX episodes_status_recent
            ON episodes(status, started_at, id, owner_agent_kind, owner_profile_id, share_scope);
        CREATE INDEX episodes_session_recent ON episodes(session_id, started_at, id)
        """,
    ),
)


class Database:
    """One connection, serialised by a lock; safe to call from any thread (use an executor in async code)."""

    def __init__(self, path: Path, busy_timeout_ms: int = 5000) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=busy_timeout_ms / 1000
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self.migrate()

    # -- plumbing -------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` inside one transaction (commit on success, rollback on error)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return out

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, params))

    def migrate(self) -> list[int]:
        with self._lock:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
            )
            done = {r[0] for r in self._conn.execute("SELECT version FROM schema_migrations")}
        applied = []
        for version, name, sql in MIGRATIONS:
            if version in done:
                continue

            def run(c: sqlite3.Connection, v: int = version, n: str = name, s: str = sql) -> None:
                for stmt in _split(s):
                    c.execute(stmt)
                c.execute(
                    "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?,?,?)",
                    (v, n, now_ms()),
                )

            self.call(run)
            applied.append(version)
        return applied

    def schema_version(self) -> int:
        rows = self.query("SELECT max(version) FROM schema_migrations")
        return int(rows[0][0] or 0)

    # -- kv / audit ------------------------------------------------------------------------
    def kv_get(self, key: str) -> Any:
        rows = self.query("SELECT value_json FROM kv WHERE key=?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def kv_set(self, key: str, value: Any) -> None:
        self.call(
            lambda c: c.execute(
                "INSERT INTO kv(key, value_json, updated_at) VALUES (?,?,?) "
                "ON CONFLICT(key) DO UPDATE SET value_json=excluded.value_json, updated_at=excluded.updated_at",
                (key, json.dumps(value), now_ms()),
            )
        )

    def audit(
        self, actor: str, kind: str, target: str | None, detail: Any, ns: Namespace | None = None
    ) -> None:
        ns = ns or Namespace()
        self.call(
            lambda c: c.execute(
                "INSERT INTO audit(owner_agent_kind, owner_profile_id, owner_workspace_id, ts, actor,"
                " kind, target, detail_json) VALUES (?,?,?,?,?,?,?,?)",
                (
                    ns.agent_kind,
                    ns.profile_id,
                    ns.workspace_id,
                    now_ms(),
                    actor,
                    kind,
                    target,
                    json.dumps(detail),
                ),
            )
        )

    # -- journal ---------------------------------------------------------------------------
    # An entry is pending (applied_at and set_aside_at NULL), applied, or set aside (a dead letter
    # after bounded retries, kept with its attempts and last error until retried or discarded).
    def journal_pending(self, limit: int = 1000, after_seq: int = 0) -> list[sqlite3.Row]:
        return self.query(
            "SELECT * FROM journal WHERE applied_at IS NULL AND set_aside_at IS NULL AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )

    def journal_last_pending(self) -> int:
        """The newest unapplied (and not set-aside) entry's seq, 0 when there is none."""
        row = self.query(
            "SELECT max(seq) FROM journal WHERE applied_at IS NULL AND set_aside_at IS NULL"
        )
        return int(row[0][0] or 0)

    def journal_backlog(self, after_seq: int = 0) -> int:
        return int(
            self.query(
                "SELECT count(*) FROM journal"
                " WHERE applied_at IS NULL AND set_aside_at IS NULL AND seq > ?",
                (after_seq,),
            )[0][0]
        )

    def journal_mark_applied(self, seqs: Iterable[int], error: str | None = None) -> None:
        seq_list = list(seqs)
        if not seq_list:
            return
        ts = now_ms()

        def run(c: sqlite3.Connection) -> None:
            c.executemany(
                "UPDATE journal SET applied_at=?, attempts=attempts+1, last_error=? WHERE seq=?",
                [(ts, error, s) for s in seq_list],
            )

        self.call(run)

    def journal_mark_failed(self, seqs: Iterable[int], error: str) -> None:
        seq_list = list(seqs)

        def run(c: sqlite3.Connection) -> None:
            c.executemany(
                "UPDATE journal SET attempts=attempts+1, last_error=? WHERE seq=?",
                [(error, s) for s in seq_list],
            )

        self.call(run)

    def journal_set_aside(self, seq: int, error: str) -> None:
        self.call(
            lambda c: c.execute(
                "UPDATE journal SET set_aside_at=?, last_error=? WHERE seq=?",
                (now_ms(), error, seq),
            )
        )

    def journal_set_aside_rows(self, limit: int = 1000) -> list[sqlite3.Row]:
        return self.query(
            "SELECT * FROM journal WHERE set_aside_at IS NOT NULL ORDER BY seq LIMIT ?", (limit,)
        )

    def journal_set_aside_count(self) -> int:
        return int(self.query("SELECT count(*) FROM journal WHERE set_aside_at IS NOT NULL")[0][0])

    def journal_requeue(self, seqs: Sequence[int] | None = None) -> list[sqlite3.Row]:
        """Set-aside entries back to pending with a fresh retry budget (all when ``seqs`` is None)."""

        def run(c: sqlite3.Connection) -> list[sqlite3.Row]:
            where, params = _seq_filter(seqs)
            rows = list(
                c.execute(f"SELECT * FROM journal WHERE set_aside_at IS NOT NULL{where}", params)
            )
            c.execute(
                f"UPDATE journal SET set_aside_at=NULL, attempts=0 WHERE set_aside_at IS NOT NULL{where}",
                params,
            )
            return rows

        return self.call(run)

    def journal_discard(self, seqs: Sequence[int] | None = None) -> int:
        """Drop set-aside entries for good (their turn keys stay known: a resend is not re-applied)."""

        def run(c: sqlite3.Connection) -> int:
            where, params = _seq_filter(seqs)
            c.execute(_KEEP_TURN_KEYS + f" AND set_aside_at IS NOT NULL{where}", params)
            return c.execute(
                f"DELETE FROM journal WHERE set_aside_at IS NOT NULL{where}", params
            ).rowcount

        return self.call(run)

    def journal_prune(self, applied_before: int, limit: int = 5000) -> int:
        """Delete applied entries older than ``applied_before`` (epoch ms), keeping their turn keys
        in the compact ``turn_keys`` index so a resent turn is still recognised."""

        def run(c: sqlite3.Connection) -> int:
            seqs = [
                r[0]
                for r in c.execute(
                    "SELECT seq FROM journal WHERE applied_at IS NOT NULL AND applied_at < ?"
                    " ORDER BY seq LIMIT ?",
                    (applied_before, limit),
                )
            ]
            if not seqs:
                return 0
            where, params = _seq_filter(seqs)
            c.execute(_KEEP_TURN_KEYS + where, params)
            return c.execute("DELETE FROM journal WHERE 1=1" + where, params).rowcount

        return self.call(run)

    def turn_keys_prune(self, created_before: int, limit: int = 5000) -> int:
        """Forget turn keys first acknowledged before ``created_before`` (epoch ms) whose journal
        entries are gone; a resend after that is stored as a new turn."""
        return self.call(
            lambda c: (
                c.execute(
                    "DELETE FROM turn_keys WHERE (session_id, turn_key) IN (SELECT session_id,"
                    " turn_key FROM turn_keys WHERE created_at < ? LIMIT ?)",
                    (created_before, limit),
                ).rowcount
            )
        )

    def journal_by_turn_key(self, session_id: str, turn_key: str) -> sqlite3.Row | None:
        """The entry (or its pruned index row) a turn key was first acknowledged with:
        ``target_id``, ``episode_id``, ``seq``, ``content_hash``."""
        rows = self.query(
            "SELECT target_id, episode_id, seq, content_hash FROM journal"
            " WHERE session_id=? AND turn_key=?"
            " UNION ALL SELECT target_id, episode_id, seq, content_hash FROM turn_keys"
            " WHERE session_id=? AND turn_key=? LIMIT 1",
            (session_id, turn_key, session_id, turn_key),
        )
        return rows[0] if rows else None

    def journal_max_seq(self) -> int:
        return int(self.query("SELECT coalesce(max(seq), 0) FROM journal")[0][0])

    # -- embedding retry queue ---------------------------------------------------------------
    def enqueue_embedding_retry(
        self,
        c: sqlite3.Connection,
        target_kind: str,
        target_id: str,
        field: str,
        text: str,
        error: str,
        max_attempts: int = 6,
    ) -> None:
        c.execute(
            "INSERT INTO embedding_retry_queue(target_kind, target_id, vector_field, source_text,"
            " status, attempts, max_attempts, next_attempt_at, last_error) VALUES (?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(target_kind, target_id, vector_field) DO UPDATE SET"
            " source_text=excluded.source_text, status='pending', last_error=excluded.last_error",
            (target_kind, target_id, field, text, "pending", 0, max_attempts, now_ms(), error),
        )

    def embedding_retries_due(self, limit: int = 25) -> list[sqlite3.Row]:
        return self.query(
            "SELECT * FROM embedding_retry_queue WHERE status='pending' AND next_attempt_at <= ?"
            " ORDER BY next_attempt_at LIMIT ?",
            (now_ms(), limit),
        )


_KEEP_TURN_KEYS = (
    "INSERT OR IGNORE INTO turn_keys(session_id, turn_key, target_id, episode_id, seq,"
    " content_hash, created_at) SELECT session_id, turn_key, target_id, episode_id, seq,"
    " content_hash, created_at FROM journal WHERE turn_key IS NOT NULL"
)


def _seq_filter(seqs: Sequence[int] | None) -> tuple[str, tuple[int, ...]]:
    """`` AND seq IN (?, ...)`` for a list of seqs (empty filter for None)."""
    if seqs is None:
        return "", ()
    marks = ", ".join("?" for _ in seqs) or "NULL"
    return f" AND seq IN ({marks})", tuple(int(s) for s in seqs)


def _split(script: str) -> list[str]:
    """Split a migration script into statements; a trigger's ``BEGIN … END`` stays whole
    (``sqlite3.complete_statement`` decides; no semicolons inside our literals)."""
    out, cur = [], ""
    for piece in script.split(";"):
        cur += piece + ";"
        if sqlite3.complete_statement(cur):
            if cur.strip(" \n;"):
                out.append(cur.strip().rstrip(";"))
            cur = ""
    if cur.strip(" \n;"):
        out.append(cur.strip().rstrip(";"))
    return out
