"""The sampler of the tracer provider ``configure_tracing`` installs (imported with the SDK, only
when a process configures tracing: thin clients never load it)."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
)


class RecordWhenExporting(Sampler):
    """The sampler of the provider we install: spans record (attributes, events, timings) only
    once an exporter is attached. Until then every span is a non-recording span that still
    carries valid trace and span ids, so log lines keep their correlation ids while a call pays
    no span bookkeeping (the RPC span alone was a quarter of a served ``health`` call)."""

    def __init__(self) -> None:
        self.exporting = False
        self._inner = ParentBased(ALWAYS_ON)

    def should_sample(
        self, parent_context: Any, trace_id: int, name: str, *args: Any, **kw: Any
    ) -> Any:
        if self.exporting:
            return self._inner.should_sample(parent_context, trace_id, name, *args, **kw)
        parent = trace.get_current_span(parent_context).get_span_context()
        return SamplingResult(Decision.DROP, None, parent.trace_state if parent.is_valid else None)

    def get_description(self) -> str:
        return "RecordWhenExporting"
