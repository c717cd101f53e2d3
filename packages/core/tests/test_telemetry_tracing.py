"""Spans: named stratamem.<stage>, useful attributes, nesting, LLM token accounting; OTLP only on request."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.llm import OpenAICompatibleLlm
from stratamem.core.telemetry import configure_tracing, span


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer() as s:
        yield s


def test_stage_spans_nest_and_keep_their_attributes(span_exporter: InMemorySpanExporter) -> None:
    with (
        span("pipeline.turn_start", session="s1", episode=None, deadline_left_ms=420),
        span("retrieval.tier2", hits=5),
    ):
        pass
    child, parent = span_exporter.get_finished_spans()
    assert (
        parent.name == "stratamem.pipeline.turn_start" and child.name == "stratamem.retrieval.tier2"
    )
    assert child.parent is not None and child.parent.span_id == parent.context.span_id
    assert dict(parent.attributes or {}) == {"session": "s1", "deadline_left_ms": 420}
    assert dict(child.attributes or {}) == {"hits": 5}


def test_a_failing_stage_marks_its_span_as_error(span_exporter: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), span("capture.summarise"):
        raise ValueError("bad")
    (s,) = span_exporter.get_finished_spans()
    assert s.status.status_code == StatusCode.ERROR
    assert any(e.name == "exception" for e in s.events)


async def test_llm_calls_record_tokens_and_latency_on_their_span(
    server: StubOpenAIServer, span_exporter: InMemorySpanExporter
) -> None:
    server.push(
        "chat", StubAnswer(content="ok", usage={"prompt_tokens": 21, "completion_tokens": 4})
    )
    await OpenAICompatibleLlm(server.url, "m", timeout_s=3).complete(
        [{"role": "user", "content": "x"}]
    )
    (s,) = [x for x in span_exporter.get_finished_spans() if x.name == "stratamem.llm.complete"]
    attrs = dict(s.attributes or {})
    assert attrs["llm.prompt_tokens"] == 21 and attrs["llm.completion_tokens"] == 4
    assert attrs["llm.total_tokens"] == 25 and attrs["llm.attempts"] == 1
    assert attrs["llm.duration_ms"] > 0 and attrs["provider"] == "openai_compatible"


def test_configure_tracing_keeps_an_existing_provider_and_exports_nothing_by_default(
    span_exporter: InMemorySpanExporter,
) -> None:
    before = trace.get_tracer_provider()
    assert isinstance(before, TracerProvider)
    processors = list(before._active_span_processor._span_processors)
    assert configure_tracing({"telemetry": {"enabled": False, "otlp_endpoint": ""}}) is before
    assert list(before._active_span_processor._span_processors) == processors
    assert configure_tracing({}, embedded=True) is before


def _otlp_installed() -> bool:
    try:
        return importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(_otlp_installed(), reason="the otlp extra is installed")
def test_otlp_endpoint_without_the_extra_is_a_clear_config_error() -> None:
    with pytest.raises(StratamemError) as exc:
        configure_tracing({"telemetry": {"otlp_endpoint": "http://127.0.0.1:4317"}})
    assert (
        exc.value.code == ErrorCode.CONFIG_INVALID and "stratamem-core[otlp]" in exc.value.message
    )


def test_the_installed_sampler_records_nothing_until_an_exporter_but_keeps_ids() -> None:
    # without an exporter a span costs no bookkeeping, yet log lines keep valid correlation ids
    from opentelemetry.sdk.trace import TracerProvider as SdkProvider

    from stratamem.core.telemetry.sampling import RecordWhenExporting

    sampler = RecordWhenExporting()
    tracer = SdkProvider(sampler=sampler).get_tracer("t")
    with (
        tracer.start_as_current_span("outer") as outer,
        tracer.start_as_current_span("inner") as inner,
    ):
        pass
    assert not outer.is_recording() and not inner.is_recording()
    assert outer.get_span_context().is_valid and inner.get_span_context().is_valid
    assert inner.get_span_context().trace_id == outer.get_span_context().trace_id
    sampler.exporting = True  # configure_tracing flips it when it attaches the OTLP exporter
    with tracer.start_as_current_span("exported") as span:
        assert span.is_recording()
