"""Shared test set-up: one global OpenTelemetry provider per test process, spans kept in memory.

OTel allows ``set_tracer_provider`` once per process, so it happens here; tests clear the exporter.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

# test-only helpers (stub_server, learning_stub) live beside the tests, never in the core wheel
sys.path.insert(0, str(Path(__file__).parent))

SPAN_EXPORTER = InMemorySpanExporter()
_provider = TracerProvider(resource=Resource.create({"service.name": "stratamem-tests"}))
_provider.add_span_processor(SimpleSpanProcessor(SPAN_EXPORTER))
trace.set_tracer_provider(_provider)


@pytest.fixture
def span_exporter() -> Iterator[InMemorySpanExporter]:
    """Finished spans of this test only (children first)."""
    SPAN_EXPORTER.clear()
    yield SPAN_EXPORTER
    SPAN_EXPORTER.clear()


@pytest.fixture(autouse=True)
def _stop_started_services(tmp_path: Path) -> Iterator[None]:
    """Thin clients start detached services; a test's homes must not keep one after it."""
    yield
    stop_services_under(tmp_path)


def stop_services_under(root: Path) -> None:
    """Stop every resident service owning a home below ``root`` (thin clients start them
    detached, so a test's homes would otherwise keep a service until its idle exit)."""
    from stratamem.contract.hostkit.client import stop_service

    for lock in root.rglob("owner.lock"):
        with contextlib.suppress(Exception):
            stop_service(lock.parent, 20)


@pytest.fixture
def stop_services() -> Callable[[Path], None]:
    """``stop_services(root)``: SIGTERM the services owning homes below ``root`` and wait."""
    return stop_services_under
