"""Shared test set-up: one global OpenTelemetry provider per test process, spans kept in memory.

OTel allows ``set_tracer_provider`` once per process, so it happens here; tests clear the exporter.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
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
    detached, so a test's homes would otherwise keep a service until its idle exit). A service
    still booting when its test ended does not own its home yet: wait for every recorded start to
    own it or exit first, or it lives on (15 min, hundreds of MB) under the tests after it."""
    from stratamem.contract.hostkit.client import owner_record, stop_service
    from stratamem.contract.hostkit.home import pid_alive

    for start in root.rglob("run/start.json"):
        home = start.parent.parent
        with contextlib.suppress(Exception):
            pid = int(json.loads(start.read_text(encoding="utf-8"))["pid"])
            give_up = time.monotonic() + 60
            while owner_record(home) is None and pid_alive(pid) and time.monotonic() < give_up:
                time.sleep(0.05)
    for lock in root.rglob("owner.lock"):
        with contextlib.suppress(Exception):
            stop_service(lock.parent, 20)


@pytest.fixture
def stop_services() -> Callable[[Path], None]:
    """``stop_services(root)``: SIGTERM the services owning homes below ``root`` and wait."""
    return stop_services_under
