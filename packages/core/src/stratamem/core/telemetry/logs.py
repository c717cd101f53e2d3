"""Logging: ``get_logger(channel)`` everywhere; ``configure_logging`` decides where lines go.

Our loggers never touch structlog's global configuration, so a host that uses structlog keeps its own.
Lines are JSON with a ``channel``, secrets redacted, and the current trace/span ids.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from opentelemetry import trace

from stratamem.core.config.settings import Section
from stratamem.core.telemetry.redact import Redactor
from stratamem.core.telemetry.sinks import (
    CHANNEL_ATTR,
    OWNED_ATTR,
    ChannelFilter,
    MonthlyFileHandler,
    StderrHandler,
    rotating_file,
)

LOGGER_NAME = "stratamem"
_std = logging.getLogger(LOGGER_NAME)
_redactor = Redactor(["api_key", "secret", "token", "password", "authorization"])

#: Channels with their own file (kept out of the app log).
AUDIT, LLM, PERF, EVENTS = "audit", "llm", "perf", "events"


def add_trace_ids(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid:
        event_dict.setdefault("trace_id", format(ctx.trace_id, "032x"))
        event_dict.setdefault("span_id", format(ctx.span_id, "016x"))
    return event_dict


def _render(
    logger: Any, method_name: str, event_dict: dict[str, Any]
) -> tuple[tuple[str], dict[str, Any]]:
    ordered: dict[str, Any] = {
        k: event_dict.pop(k) for k in ("timestamp", "level", "channel", "event") if k in event_dict
    }
    ordered.update(event_dict)
    line = json.dumps(ordered, default=str, ensure_ascii=False)
    return (line,), {"extra": {CHANNEL_ATTR: str(ordered.get("channel", ""))}}


def _redact(logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    return _redactor(logger, method_name, event_dict)


_PROCESSORS: list[Any] = [
    structlog.stdlib.filter_by_level,
    structlog.contextvars.merge_contextvars,
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    add_trace_ids,
    structlog.processors.StackInfoRenderer(),
    structlog.processors.dict_tracebacks,
    _redact,
    _render,
]


def get_logger(channel: str, **bound: Any) -> Any:
    """A structlog logger bound to ``channel`` (``llm``, ``perf``, ``audit``, ``events`` have own files)."""
    return structlog.wrap_logger(
        _std,
        processors=_PROCESSORS,
        wrapper_class=structlog.stdlib.BoundLogger,
        context_class=dict,
        cache_logger_on_first_use=False,
    ).bind(channel=channel, **bound)


@dataclass
class LoggingSetup:
    """What ``configure_logging`` did: ``owned`` is False when the host keeps control."""

    owned: bool
    level: int
    logs_dir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)
    console: bool = False


_state: dict[str, Any] = {"perf": False}


def perf_enabled() -> bool:
    return bool(_state["perf"])


def _section(config: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = config.get("logging")
    return inner if isinstance(inner, Mapping) else config


def _remove_owned_handlers() -> None:
    for h in list(_std.handlers):
        if getattr(h, OWNED_ATTR, False):
            _std.removeHandler(h)
            h.close()


def _add(handler: logging.Handler, level: int, **filters: Any) -> None:
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(message)s"))
    if filters:
        handler.addFilter(ChannelFilter(**filters))
    setattr(handler, OWNED_ATTR, True)
    _std.addHandler(handler)


def configure_logging(
    home: Path | None, config: Mapping[str, Any] | None = None, *, embedded: bool = False
) -> LoggingSetup:
    """Install (or replace) Stratamem's sinks. ``config`` is the whole config or its ``logging`` part.

    Files in ``<home>/logs/``: ``stratamem.log`` (size-rotated), ``error.log``, ``audit.log`` (monthly,
    never deleted), ``llm.jsonl``, ``perf.jsonl``, ``events.jsonl``; console lines on stderr. With
    ``embedded=True`` the host's logging is left alone (records propagate to it) unless
    ``logging.embedded`` is ``"own"``.
    """
    cfg = Section("logging", _section(config or {}))
    level_name = cfg.get_str("level").upper()
    level = logging.getLevelName(level_name)
    if not isinstance(level, int):
        from stratamem.contract.errors import ErrorCode, StratamemError

        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"logging.level {cfg.get('level')!r} is not a level",
            {"key": "logging.level"},
        )
    _redactor.add_keys(str(k) for k in (cfg.get("redact_keys") or ()))
    _remove_owned_handlers()
    _state["perf"] = False
    if embedded and cfg.get_str("embedded") != "own":
        _std.propagate = True
        _std.setLevel(logging.NOTSET)
        return LoggingSetup(owned=False, level=level)
    _std.setLevel(level)
    _std.propagate = False
    setup = LoggingSetup(owned=True, level=level)
    if home is not None and cfg.get_bool("file"):
        logs = Path(home) / "logs"
        logs.mkdir(parents=True, exist_ok=True, mode=0o700)
        max_bytes = cfg.get_int("file_max_bytes")
        backups = cfg.get_int("file_backups")
        files = {
            "app": logs / "stratamem.log",
            "error": logs / "error.log",
            AUDIT: logs / "audit.log",
            LLM: logs / "llm.jsonl",
            PERF: logs / "perf.jsonl",
            EVENTS: logs / "events.jsonl",
        }
        _add(
            rotating_file(files["app"], max_bytes=max_bytes, backups=backups),
            level,
            exclude=(PERF, EVENTS),
        )
        _add(rotating_file(files["error"], max_bytes=max_bytes, backups=backups), logging.ERROR)
        _add(MonthlyFileHandler(files[AUDIT]), logging.DEBUG, include=(AUDIT,))
        for channel in (LLM, PERF, EVENTS):
            if cfg[f"{channel}_log"] is False:
                files.pop(channel)
                continue
            _add(
                rotating_file(files[channel], max_bytes=max_bytes, backups=5),
                logging.DEBUG,
                include=(channel,),
            )
        _state["perf"] = PERF in files
        if _state["perf"] and level > logging.INFO:
            _std.setLevel(
                logging.INFO
            )  # perf/llm/events lines are info; the app log keeps its level
        setup.logs_dir, setup.files = logs, files
    if cfg.get_bool("console"):
        _add(StderrHandler(), level, exclude=(PERF, EVENTS))
        setup.console = True
    return setup


def reset_logging() -> None:
    """Remove our sinks and hand records back to the root logger (tests, shutdown)."""
    _remove_owned_handlers()
    _state["perf"] = False
    _std.propagate = True
    _std.setLevel(logging.NOTSET)
