"""Observability: structlog JSON logs with channels and redaction, OpenTelemetry spans.

Offline by default: no telemetry is sent anywhere unless OTLP export is configured.
"""

from stratamem.core.telemetry.events_log import attach_event_log, event_log_observer
from stratamem.core.telemetry.logs import (
    LoggingSetup,
    add_trace_ids,
    configure_logging,
    get_logger,
    reset_logging,
)
from stratamem.core.telemetry.redact import Redactor, redact
from stratamem.core.telemetry.tracing import configure_tracing, span, tracer

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
