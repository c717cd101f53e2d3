"""``StratamemMemoryProvider``: Stratamem as the external ``MemoryProvider`` of hermes-agent.

Hermes calls it from the turn thread, a prefetch thread (cut off at 8 s) and one sync worker, so all
per-turn state goes through :class:`TurnLedger` snapshots and every core call has a bound.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.memory_provider import MemoryProvider

from stratamem.contract.dtos import (
    Namespace,
    RetrievalQuery,
    SubagentOutcome,
    TurnInput,
    TurnResult,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.hermes import bridge as bridges
from stratamem.hermes import tools
from stratamem.hermes.host_llm import lend, unlend
from stratamem.hermes.host_logging import use_host_logging
from stratamem.hermes.messages import extract_turn
from stratamem.hermes.settings import (
    CONFIG_SCHEMA,
    RESERVE_S,
    HermesSettings,
    load_settings,
    save_settings,
)
from stratamem.hermes.spool import Spool
from stratamem.hermes.turns import TurnLedger

log = logging.getLogger("stratamem.hermes")

AGENT = "hermes"
WRITING_CONTEXTS = frozenset({"primary"})
#: Hermes' own "review the conversation" prompts are not user turns.
_INTERNAL_PREFIXES = ("Review the conversation above",)
SESSION_END_BOUND_S = 5.0
SHUTDOWN_BOUND_S = 4.5
TOOL_TIMEOUT_S = 30.0
#: a mirrored memory-tool write waits this long for the service (it may still be starting)
MIRROR_TIMEOUT_S = 30.0
#: How long sync_turn waits for a core that is still opening before it spools the turn.
SYNC_OPEN_WAIT_S = 2.0
_SPOOL_CODES = frozenset(
    {
        ErrorCode.DEADLINE_EXCEEDED,
        ErrorCode.TRANSPORT_CLOSED,
        ErrorCode.ALREADY_SHUT_DOWN,
        ErrorCode.HOME_LOCKED,
        ErrorCode.BACKEND_UNAVAILABLE,
    }
)

SYSTEM_BLOCK = """# Stratamem memory
You have long-term memory that persists across sessions. Relevant memories are injected automatically
before each turn inside <memory-context>. To look further, call: memos_search (free-text search),
memos_get (one memory by id), memos_timeline (steps of a past episode), memos_environment (environment
knowledge), memos_skill_list / memos_skill_get (learned skills)."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def _log_failure(future: Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.info("stratamem background write failed: %s", future.exception())


class StratamemMemoryProvider(MemoryProvider):  # type: ignore[misc,unused-ignore]
    """Thread-safe: the turn thread, the prefetch thread and the sync worker may call at once."""

    def __init__(self, *, opener: bridges.Opener | None = None, **_: Any) -> None:
        use_host_logging()
        self._opener = opener
        self._lock = threading.RLock()
        self._ledger = TurnLedger()
        self._bridge: bridges.CoreBridge | None = None
        self._settings: HermesSettings | None = None
        self._session_id = ""
        self._namespace = Namespace(agent_kind=AGENT)
        self._writes = False
        self._platform = ""
        self._visible_start_ms: int | None = None
        self._last_recalled = 0
        self._closers: list[threading.Thread] = []
        self._closed_sessions: set[str] = set()
        self._shut = False
        self._lent = False
        self._spool: Spool | None = None
        self._writes_in_flight: list[Future[Any]] = []

    # -- identity -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return "stratamem"

    def is_available(self, **_: Any) -> bool:
        """Local check only: the core is importable (no network, no store opened)."""
        import importlib.util

        return importlib.util.find_spec("stratamem.core") is not None

    def unavailable_reason(self, **_: Any) -> str:
        return "" if self.is_available() else "stratamem-core is not installed"

    # -- lifecycle ------------------------------------------------------------------------------
    def initialize(self, session_id: str, **kwargs: Any) -> None:
        hermes_home = kwargs.get("hermes_home") or os.environ.get("HERMES_HOME") or "~/.hermes"
        settings = load_settings(Path(str(hermes_home)).expanduser())
        context = str(kwargs.get("agent_context") or "primary")
        identity = str(kwargs.get("agent_identity") or "default")
        workspace = kwargs.get("agent_workspace")
        with self._lock:
            self._settings = settings
            self._session_id = session_id or ""
            self._writes = context in WRITING_CONTEXTS
            self._platform = str(kwargs.get("platform") or "")
            self._namespace = Namespace(
                agent_kind=AGENT,
                profile_id=identity,
                workspace_id=str(workspace) if workspace else None,
                session_key=self._session_id or None,
            )
            if self._bridge is None:
                if settings.lend_llm and not self._lent:
                    self._lent = lend(settings.home)  # the service borrows Hermes' model
                self._bridge = bridges.acquire(settings.home, self._opener)
            bridge = self._bridge
            self._spool = bridge.spool
            self._shut = False
        bridge.warm()  # open the store off the turn thread; the first prefetch waits within budget

    def initialize_for_inspection(self, session_id: str, **kwargs: Any) -> None:
        self.initialize(session_id, **kwargs)

    def shutdown(self, **_: Any) -> None:
        """Idempotent; waits for detached session closes, then releases the core (≤ 5 s total)."""
        with self._lock:
            if self._shut:
                return
            self._shut = True
            bridge, self._bridge = self._bridge, None
            closers, self._closers = list(self._closers), []
            writes, self._writes_in_flight = self._writes_in_flight, []
            lent, self._lent = self._lent, False
        end = time.monotonic() + SHUTDOWN_BOUND_S
        for thread in closers:
            thread.join(max(0.0, min(SESSION_END_BOUND_S, end - time.monotonic() - 1.0)))
        # fire-and-forget writes (sub-agent outcomes) land before the core closes, within the bound
        futures_wait(writes, timeout=max(0.0, end - time.monotonic() - 1.0))
        if bridge is not None:
            bridges.release(bridge, timeout=max(0.5, end - time.monotonic()))
        if lent:
            unlend()

    # -- prompt ---------------------------------------------------------------------------------
    def system_prompt_block(self, **_: Any) -> str:
        return SYSTEM_BLOCK

    # -- turn -----------------------------------------------------------------------------------
    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        with self._lock:
            session = self._session_id
        self._ledger.start(session, int(turn_number or 0), message or "")

    def _budget(self) -> float:
        with self._lock:
            settings = self._settings
        return settings.prefetch_budget_s if settings else 6.0

    def _hints(self) -> dict[str, Any]:
        # Hermes keeps the whole session in the prompt (a resumed session too), so everything this
        # session stored is visible; after a compression only what came later is.
        return {
            "host": AGENT,
            "platform": self._platform,
            "visibleContextKnown": True,
            "visibleContextStartTs": self._visible_start_ms or 0,
        }

    def prefetch(self, query: str, *, session_id: str = "", **kwargs: Any) -> str:
        """Composite turn start within start + budget − 0.25 s; rendered context, or ``""``."""
        started = time.monotonic()
        budget = self._budget()
        try:
            if not query or not query.strip() or query.startswith(_INTERNAL_PREFIXES):
                return ""
            with self._lock:
                bridge = self._bridge
                session = self._session_id or session_id
                namespace = self._namespace
                writes = self._writes
                hints = self._hints()
            if bridge is None:
                return ""
            state = self._ledger.current(session, query)
            deadline_ms = _now_ms() + int((budget - RESERVE_S) * 1000)
            remaining = budget - RESERVE_S - (time.monotonic() - started)
            if writes:
                turn = TurnInput(
                    agent=AGENT,
                    session_id=session,
                    user_text=query,
                    ts=_now_ms(),
                    namespace=namespace,
                    turn_key=state.key,
                    context_hints=hints,
                    deadline_at=deadline_ms,
                )
                result = bridge.call(lambda core: core.turn_start(turn), timeout=remaining)
            else:  # sub-agent / cron / flush: retrieval only, no session or episode writes
                q = RetrievalQuery(
                    agent=AGENT,
                    query=query,
                    namespace=namespace,
                    session_id=session,
                    reason="turn_start",
                    context_hints=hints,
                    deadline_at=deadline_ms,
                )
                result = bridge.call(lambda core: core.search(q), timeout=remaining)
            text = (result.injected_context or "").strip()
            self._ledger.attach_recall(state.key, result.query.episode_id, text, len(result.hits))
            with self._lock:
                self._last_recalled = len(result.hits) if text else 0
            return text
        except Exception as exc:  # Hermes wants text or "", never an exception
            log.warning("stratamem prefetch gave up: %s", exc)
            with self._lock:
                self._last_recalled = 0
            return ""

    def recall_status(self, **_: Any) -> Any:
        """Newer Hermes: ``RecallStatus(provider_label, count)``; absent in 0.19.0 (returns None)."""
        try:
            from agent.memory_provider import RecallStatus  # type: ignore[attr-defined,unused-ignore]
        except ImportError:
            return None
        with self._lock:
            count = self._last_recalled
        return RecallStatus(provider_label="Stratamem", count=count) if count else None

    def queue_prefetch(self, query: str, *, session_id: str = "", **kwargs: Any) -> None:
        """Deliberately nothing: the next turn's composite turn start is keyed by its own turn."""

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        """Durable on return: ``turn_end`` from a snapshot of this turn taken now."""
        with self._lock:
            if not self._writes or self._spool is None:
                return
            bridge = self._bridge  # None after shutdown: the turn is spooled, not lost
            spool = self._spool
            session = session_id or self._session_id
            namespace = self._namespace
            hints = self._hints()
            timeout = (
                4.0 if self._shut else (self._settings.sync_timeout_s if self._settings else 60.0)
            )
        snapshot = list(messages) if messages else None
        state = self._ledger.claim(session, user_content or "")
        tool_calls, thinking = extract_turn(snapshot, user_content or "")
        turn = TurnInput(
            agent=AGENT,
            session_id=session,
            user_text=user_content,
            ts=state.started_ms,
            namespace=namespace,
            turn_key=state.key,
            context_hints=hints,
        )
        result = TurnResult(
            agent=AGENT,
            session_id=session,
            agent_text=assistant_content or "",
            ts=_now_ms(),
            episode_id=state.episode_id,
            namespace=namespace,
            tool_calls=tool_calls,
            agent_thinking=thinking,
            context_hints=hints,
            turn_key=state.key,
            user_text=user_content,
        )
        if bridge is None:  # shut down: the next open replays it
            spool.put_turn(turn, result)
            return
        if not bridge.ready(SYNC_OPEN_WAIT_S) and bridge.spool_unless_open(
            lambda: spool.put_turn(turn, result)
        ):
            return  # the core is still opening (or closed): handed over durably, replayed on open
        try:
            if result.episode_id is None:  # recall was skipped or cut off: route now, same key
                routed = bridge.call(lambda core: core.turn_start(turn), timeout=timeout)
                result = replace(result, episode_id=routed.query.episode_id)
            try:
                bridge.call(lambda core: core.turn_end(result), timeout=timeout)
            except StratamemError as exc:
                if exc.code is not ErrorCode.TRANSPORT_CLOSED:
                    raise
                bridge.call(lambda core: core.turn_end(result), timeout=timeout)  # once more
        except StratamemError as exc:
            if exc.code not in _SPOOL_CODES:
                raise
            spool.put_turn(turn, result)

    # -- session boundaries ---------------------------------------------------------------------
    def on_pre_compress(self, messages: list[dict[str, Any]], **_: Any) -> str:
        """Read-only: no episode is opened; returns what was last injected."""
        with self._lock:
            self._visible_start_ms = _now_ms()
        last = self._ledger.last_injected()
        return f"Stratamem memory snapshot (preserved across compression):\n{last}" if last else ""

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            old = self._session_id
            self._session_id = new_session_id or old
            self._namespace = Namespace(
                agent_kind=self._namespace.agent_kind,
                profile_id=self._namespace.profile_id,
                workspace_id=self._namespace.workspace_id,
                session_key=self._session_id or None,
            )
            if reset or new_session_id != old:
                self._visible_start_ms = None
        if rewound:
            self._ledger.forget_session(new_session_id or old)
        if reset and old and old != new_session_id:
            self._close_detached(old)

    def on_session_end(self, messages: list[dict[str, Any]] | None = None, **_: Any) -> None:
        """Detached and bounded: the close waits for this session's pending sync (≤ 5 s)."""
        with self._lock:
            session = self._session_id
        if session:
            self._close_detached(session)

    def _close_detached(self, session: str) -> None:
        with self._lock:
            if not self._writes or self._bridge is None or session in self._closed_sessions:
                return
            self._closed_sessions.add(session)
            bridge = self._bridge

        def close() -> None:
            end = time.monotonic() + SESSION_END_BOUND_S
            # Hermes may end the session before the last sync_turn ran: let it land first.
            while self._ledger.pending(session) and time.monotonic() < end - 1.0:
                time.sleep(0.05)
            try:
                bridge.call(
                    lambda core: core.close_session(session, reason="session_end"),
                    timeout=max(0.2, end - time.monotonic()),
                )
            except Exception as exc:
                log.info("stratamem close_session(%s) skipped: %s", session, exc)

        thread = threading.Thread(target=close, name="stratamem-session-end", daemon=True)
        with self._lock:
            self._closers.append(thread)
        thread.start()

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        with self._lock:
            if not self._writes or self._bridge is None:
                return
            bridge = self._bridge
            outcome = SubagentOutcome(
                agent=AGENT,
                session_id=self._session_id,
                task=task or "",
                result=result or "",
                namespace=self._namespace,
                child_session_id=child_session_id or None,
                outcome="ok" if result else "unknown",
                ts=_now_ms(),
            )
        future = bridge.submit(lambda core: core.record_subagent_outcome(outcome))
        future.add_done_callback(_log_failure)
        with self._lock:
            self._writes_in_flight = [f for f in self._writes_in_flight if not f.done()]
            self._writes_in_flight.append(future)

    def on_memory_write(
        self,
        action: str,
        target: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        from stratamem.hermes import mirror

        with self._lock:
            if not self._writes or self._settings is None or self._bridge is None:
                return
            hermes_home = self._settings.hermes_home
            namespace = self._namespace
            bridge = self._bridge
        meta = dict(metadata or {})
        # bad input is refused here, before the service is asked anything
        mirror.validate(action, target, content, mirror.old_text_of(action, content, meta))
        bridge.call(
            lambda core: mirror.mirror_memory_write(
                core.workspace(open_roots=True),
                hermes_home,
                namespace,
                action,
                target,
                content,
                meta,
            ),
            timeout=MIRROR_TIMEOUT_S,
        )

    # -- tools ----------------------------------------------------------------------------------
    def get_tool_schemas(self, **_: Any) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(s)) for s in tools.TOOL_SCHEMAS]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Always a JSON string: the result, or ``{"error": {code, message, details}}``."""
        try:
            clean = tools.validate(tool_name, args)
            with self._lock:
                bridge = self._bridge
                namespace = self._namespace
                session = self._session_id
            if bridge is None:
                raise StratamemError(ErrorCode.NOT_INITIALIZED, "stratamem is not initialized")
            value = bridge.call(
                lambda core: tools.run(core, tool_name, clean, namespace, session),
                timeout=TOOL_TIMEOUT_S,
            )
            return json.dumps(value, default=str, ensure_ascii=False)
        except Exception as exc:
            return tools.error_json(exc)

    # -- setup / backup -------------------------------------------------------------------------
    def get_config_schema(self, **_: Any) -> list[dict[str, Any]]:
        return [dict(field) for field in CONFIG_SCHEMA]

    def save_config(self, values: dict[str, Any], hermes_home: str, **_: Any) -> None:
        save_settings(values, hermes_home)

    def backup_paths(self, **_: Any) -> list[str]:
        """``hermes backup`` walks HERMES_HOME only: name the store when it lives elsewhere."""
        with self._lock:
            settings = self._settings
        if settings is None:
            try:
                settings = load_settings(os.environ.get("HERMES_HOME") or "~/.hermes")
            except StratamemError:
                return []
        try:
            settings.home.relative_to(settings.hermes_home)
            return []
        except ValueError:
            return [str(settings.home)]
