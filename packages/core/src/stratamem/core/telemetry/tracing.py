"""OpenTelemetry spans around pipeline stages and RPCs; OTLP export only when configured.

Nothing is sent anywhere by default. Each finished span also becomes a ``perf.jsonl`` stage timer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace

_exporters: set[str] = set()


_tracer: list[Any] = [None, None]  # [provider, its tracer]


def tracer() -> trace.Tracer:
    """The ``stratamem.core`` tracer of the current provider, built once per provider (every
    pipeline stage and RPC opens a span; ``get_tracer`` builds a new tracer object each call)."""
    provider = trace.get_tracer_provider()
    if _tracer[0] is not provider:
        _tracer[0], _tracer[1] = provider, provider.get_tracer("stratamem.core")
    out: trace.Tracer = _tracer[1]
    return out


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[trace.Span]:
    """A span named ``stratamem.<name>``; ``None`` attributes are dropped."""
    from stratamem.core.telemetry.logs import perf_enabled

    attrs = {k: v for k, v in attributes.items() if v is not None}
    started = time.perf_counter()
    error: str | None = None
    try:
        with tracer().start_as_current_span(f"stratamem.{name}", attributes=attrs) as s:
            yield s
    except BaseException as exc:
        error = type(exc).__name__
        raise
    finally:
        if perf_enabled():
            _perf_log().info(
                "stage",
                stage=name,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
                error=error,
                **{k: v for k, v in attrs.items() if isinstance(v, (str, int, float, bool))},
            )


_perf: list[Any] = []


def _perf_log() -> Any:
    """The ``perf`` channel's logger, built once (a span ends on every pipeline stage)."""
    if not _perf:
        from stratamem.core.telemetry.logs import get_logger

        _perf.append(get_logger("perf"))
    return _perf[0]


def configure_tracing(config: Mapping[str, Any] | None = None, *, embedded: bool = False) -> Any:
    """Install a ``TracerProvider`` (service.name ``stratamem``) unless one is already set, and add
    OTLP export when ``telemetry.otlp_endpoint`` is configured (extra ``stratamem-core[otlp]``).

    ``config`` is the whole config or its ``telemetry`` part. Embedded in a host without OTLP, the
    host's provider (or none) is left alone. Returns the provider in use.
    """
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from stratamem.core.telemetry.sampling import RecordWhenExporting

    cfg_any = (config or {}).get("telemetry")
    cfg: Mapping[str, Any] = cfg_any if isinstance(cfg_any, Mapping) else (config or {})
    endpoint = str(cfg.get("otlp_endpoint") or "").strip()
    current = trace.get_tracer_provider()
    if embedded and not endpoint:
        return current
    if isinstance(current, TracerProvider):
        provider = current
    else:
        try:
            from importlib.metadata import version

            core_version = version("stratamem-core")
        except Exception:  # pragma: no cover - running from a source tree
            core_version = "0"
        resource = Resource.create(
            {
                "service.name": str(cfg.get("service_name") or "stratamem"),
                "service.version": core_version,
            }
        )
        provider = TracerProvider(resource=resource, sampler=RecordWhenExporting())
        trace.set_tracer_provider(provider)
        provider = trace.get_tracer_provider()  # type: ignore[assignment]
    if endpoint and endpoint not in _exporters and isinstance(provider, TracerProvider):
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            from stratamem.contract.errors import ErrorCode, StratamemError

            raise StratamemError(
                ErrorCode.CONFIG_INVALID,
                "telemetry.otlp_endpoint is set but the OTLP exporter is not installed: "
                "pip install 'stratamem-core[otlp]'",
                {"key": "telemetry.otlp_endpoint"},
            ) from exc
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        _exporters.add(endpoint)
        if isinstance(provider.sampler, RecordWhenExporting):
            provider.sampler.exporting = True
    return provider
