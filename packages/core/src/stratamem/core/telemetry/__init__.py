"""Observability: structlog JSON logs with channels and redaction, OpenTelemetry spans.

Offline by default: no telemetry is sent anywhere unless OTLP export is configured.
"""

from typing import TYPE_CHECKING, Any

# ``redact`` is also a submodule's name: bound eagerly, or the submodule would shadow the function
from stratamem.core.telemetry.redact import Redactor, redact

if TYPE_CHECKING:
    from stratamem.core.telemetry.events_log import attach_event_log, event_log_observer
    from stratamem.core.telemetry.logs import (
        LoggingSetup,
        add_trace_ids,
        configure_logging,
        get_logger,
        reset_logging,
    )
    from stratamem.core.telemetry.tracing import configure_tracing, span, tracer

# lazy (PEP 562): a CLI process or thin client that only logs must not import OpenTelemetry
_LAZY: dict[str, str] = {
    "attach_event_log": "stratamem.core.telemetry.events_log",
    "event_log_observer": "stratamem.core.telemetry.events_log",
    "LoggingSetup": "stratamem.core.telemetry.logs",
    "add_trace_ids": "stratamem.core.telemetry.logs",
    "configure_logging": "stratamem.core.telemetry.logs",
    "get_logger": "stratamem.core.telemetry.logs",
    "reset_logging": "stratamem.core.telemetry.logs",
    "configure_tracing": "stratamem.core.telemetry.tracing",
    "span": "stratamem.core.telemetry.tracing",
    "tracer": "stratamem.core.telemetry.tracing",
}

__all__ = [
    "LoggingSetup",
    "Redactor",
    "add_trace_ids",
    "attach_event_log",
    "configure_logging",
    "configure_tracing",
    "event_log_observer",
    "get_logger",
    "redact",
    "reset_logging",
    "span",
    "tracer",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
