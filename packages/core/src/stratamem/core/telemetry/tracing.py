"""OpenTelemetry spans around pipeline stages and RPCs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace


def tracer() -> trace.Tracer:
    return trace.get_tracer("stratamem.core")


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[trace.Span]:
    """A span named ``stratamem.<name>``; ``None`` attributes are dropped."""
    attrs = {k: v for k, v in attributes.items() if v is not None}
    with tracer().start_as_current_span(f"stratamem.{name}", attributes=attrs) as s:
        yield s
