"""The generated reference pages in ``docs/reference`` match the code they are generated from."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "gen_docs.py"
COMMITTED = REPO / "docs" / "reference"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="needs the monorepo checkout")


def gen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("stratamem.core.storage.schemas")
    out = tmp_path_factory.mktemp("reference")
    result = gen("--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_committed_reference_pages_are_up_to_date(fresh: Path) -> None:
    for name in ("events.md", "data-model.md"):
        committed = (COMMITTED / name).read_text("utf-8")
        assert committed == (fresh / name).read_text("utf-8"), (
            f"docs/reference/{name} is stale: run python scripts/gen_docs.py"
        )


def test_a_stale_page_is_reported(fresh: Path, tmp_path: Path) -> None:
    stale = tmp_path / "reference"
    shutil.copytree(fresh, stale)
    events = stale / "events.md"
    text = events.read_text("utf-8")
    assert "`trace.created`" in text and "`turn.captured`" in text
    events.write_text(text.replace("`trace.created`", "`trace.made`"), "utf-8")
    result = gen("--check", "--out", str(stale))
    assert result.returncode == 1
    assert "events.md" in result.stderr
    assert "data-model.md" not in result.stderr


def test_data_model_lists_every_dto_and_lancedb_table(fresh: Path) -> None:
    from stratamem.contract.codec import DTO_TYPES

    page = (fresh / "data-model.md").read_text("utf-8")
    for cls in DTO_TYPES:
        assert f"### `{cls.__name__}`" in page
    for table in ("traces", "policies", "world_models", "skills"):
        assert f"### `{table}`" in page
    assert "`context_hints_json` (8)" in page
