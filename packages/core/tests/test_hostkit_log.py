"""Adapter lines logged through the host kit (stdlib only) land in the core's sinks as JSON lines."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from stratamem.contract.hostkit.log import get_logger
from stratamem.core.telemetry import configure_logging, reset_logging


@pytest.fixture(autouse=True)
def _clean_logging() -> Iterator[None]:
    reset_logging()
    yield
    reset_logging()


def test_an_adapter_line_reaches_the_app_log_with_its_channel(tmp_path: Path) -> None:
    configure_logging(tmp_path, {"level": "info"})
    get_logger("dsh.bridge").warning("dsh.capture_failed", key="s:1", error="boom")
    get_logger("dsh.bridge").debug("too chatty")
    for h in logging.getLogger("stratamem").handlers:
        h.flush()
    text = (tmp_path / "logs" / "stratamem.log").read_text()
    (rec,) = [json.loads(x) for x in text.splitlines() if "dsh." in x]
    assert rec["channel"] == "dsh.bridge" and rec["event"] == "dsh.capture_failed"
    assert rec["level"] == "warning" and rec["key"] == "s:1" and rec["timestamp"].endswith("Z")
