"""The generated reference pages in ``docs/reference`` match the code they are generated from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "gen_docs.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="needs the monorepo checkout")


def gen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def test_committed_reference_pages_are_up_to_date() -> None:
    pytest.importorskip("stratamem.core.storage.schemas")
    result = gen("--check")
    assert result.returncode == 0, result.stderr


def test_a_stale_page_is_reported(tmp_path: Path) -> None:
    pytest.importorskip("stratamem.core.storage.schemas")
    assert gen("--out", str(tmp_path)).returncode == 0
    events = tmp_path / "events.md"
    text = events.read_text("utf-8")
    assert "`trace.created`" in text and "`turn.captured`" in text
    events.write_text(text.replace("`trace.created`", "`trace.made`"), "utf-8")
    result = gen("--check", "--out", str(tmp_path))
    assert result.returncode == 1
    assert "events.md" in result.stderr


def test_data_model_lists_every_dto_and_lancedb_table(tmp_path: Path) -> None:
    pytest.importorskip("stratamem.core.storage.schemas")
    from stratamem.contract.codec import DTO_TYPES

    assert gen("--out", str(tmp_path)).returncode == 0
    page = (tmp_path / "data-model.md").read_text("utf-8")
    for cls in DTO_TYPES:
        assert f"### `{cls.__name__}`" in page
    for table in ("traces", "policies", "world_models", "skills"):
        assert f"### `{table}`" in page
    assert "`context_hints_json` (8)" in page
