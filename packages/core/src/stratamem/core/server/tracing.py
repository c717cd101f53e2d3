"""Per-RPC OpenTelemetry spans whose parent comes from the caller's W3C trace context in metadata."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import propagate, trace

from stratamem.core.telemetry import tracer


def _carrier(metadata: Sequence[tuple[str, Any]] | None) -> dict[str, str]:
    return {k.lower(): v for k, v in (metadata or ()) if isinstance(v, str)}


@contextmanager
def rpc_span(method: str, metadata: Sequence[tuple[str, Any]] | None) -> Iterator[trace.Span]:
    """A SERVER span ``stratamem.rpc.<method>`` continuing the client's trace when it sent one."""
    parent = propagate.extract(_carrier(metadata))
    with tracer().start_as_current_span(
        f"stratamem.rpc.{method}",
        context=parent,
        kind=trace.SpanKind.SERVER,
        attributes={"rpc.system": "grpc", "rpc.method": method},
    ) as span:
        yield span
