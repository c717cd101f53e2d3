"""Observability: structlog JSON logs with channels and redaction, OpenTelemetry spans.

Offline by default: no telemetry is sent anywhere unless OTLP export is configured.
"""

from stratamem.core.telemetry.logs import get_logger
from stratamem.core.telemetry.tracing import span, tracer

__all__ = ["get_logger", "span", "tracer"]
