"""Per-turn state keyed by ``<session>:<turn>``, so a lagging sync worker never mixes two turns.

The turn thread opens a turn, the prefetch thread attaches recall to it, the sync worker claims it:
each step takes a snapshot under one lock and works on the copy.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TurnState:
    key: str
    session_id: str
    number: int
    user_text: str
    started_ms: int
    episode_id: str | None = None
    injected: str = ""
    recalled: int = 0
    synced: bool = False


def _norm(text: str) -> str:
    return " ".join(text.split())


class TurnLedger:
    """Thread-safe record of open turns; bounded (old synced turns are dropped)."""

    def __init__(self, keep: int = 64) -> None:
        self._lock = threading.Lock()
        self._turns: dict[str, TurnState] = {}
        self._current: str | None = None
        self._keep = keep
        self._counter = 0

    def start(self, session_id: str, number: int | None, user_text: str) -> TurnState:
        """Open (or re-open, same key) a turn and make it current for the turn thread."""
        with self._lock:
            if number is None or number <= 0:
                self._counter += 1
                number = self._counter
            else:
                self._counter = max(self._counter, number)
            key = f"{session_id}:{number}"
            old = self._turns.get(key)
            if old is not None and _norm(old.user_text) == _norm(user_text) and not old.synced:
                state = old
            else:
                state = TurnState(key, session_id, number, user_text, int(time.time() * 1000))
                self._turns[key] = state
            self._current = key
            self._trim()
            return state

    def current(self, session_id: str, query: str) -> TurnState:
        """The turn a prefetch belongs to: the current one, or a new one if none matches."""
        with self._lock:
            state = self._turns.get(self._current) if self._current else None
        if state is not None and state.session_id == session_id and not state.synced:
            return state
        return self.start(session_id, None, query)

    def attach_recall(self, key: str, episode_id: str | None, injected: str, recalled: int) -> None:
        with self._lock:
            state = self._turns.get(key)
            if state is not None:
                self._turns[key] = replace(
                    state,
                    episode_id=episode_id or state.episode_id,
                    injected=injected,
                    recalled=recalled,
                )

    def claim(self, session_id: str, user_text: str) -> TurnState:
        """Snapshot the oldest unsynced turn of ``session_id`` whose text matches, and mark it synced."""
        with self._lock:
            pending = [
                s for s in self._turns.values() if s.session_id == session_id and not s.synced
            ]
            pending.sort(key=lambda s: (s.number, s.started_ms))
            wanted = _norm(user_text)
            match = next((s for s in pending if _norm(s.user_text) == wanted), None)
            if match is None:
                match = next((s for s in pending if wanted and wanted in _norm(s.user_text)), None)
            if match is None:
                self._counter += 1
                key = f"{session_id}:{self._counter}"
                match = TurnState(
                    key, session_id, self._counter, user_text, int(time.time() * 1000)
                )
            claimed = replace(match, synced=True)
            self._turns[claimed.key] = claimed
            self._trim()
            return match

    def pending(self, session_id: str) -> int:
        with self._lock:
            return sum(
                1 for s in self._turns.values() if s.session_id == session_id and not s.synced
            )

    def last_injected(self) -> str:
        with self._lock:
            states = sorted(self._turns.values(), key=lambda s: s.started_ms)
        for state in reversed(states):
            if state.injected:
                return state.injected
        return ""

    def forget_session(self, session_id: str) -> None:
        with self._lock:
            for key in [k for k, s in self._turns.items() if s.session_id == session_id]:
                del self._turns[key]
            if self._current and self._current not in self._turns:
                self._current = None

    def get(self, key: str) -> TurnState | None:
        with self._lock:
            return self._turns.get(key)

    def _trim(self) -> None:
        synced = [k for k, s in self._turns.items() if s.synced]
        for key in synced[: max(0, len(self._turns) - self._keep)]:
            del self._turns[key]
