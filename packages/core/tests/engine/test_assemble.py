"""engine.assemble and opening: a core from a home, cleanup on failure, no import cycle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stratamem.contract.errors import StratamemError
from stratamem.core.engine import assemble
from stratamem.core.local import LocalCore
from stratamem.core.opening import open_core


async def test_a_fresh_home_is_prepared_locked_and_started(tmp_path: Path) -> None:
    core = await assemble.open_local_core(tmp_path, embedding__provider="none")
    try:
        assert isinstance(core, LocalCore) and core.lightweight
        assert (tmp_path / "config.yaml").exists() and (tmp_path / "data" / "stratamem.db").exists()
        with pytest.raises(StratamemError) as err:
            await assemble.open_local_core(tmp_path, embedding__provider="none")
        assert err.value.code == "home_locked"
    finally:
        await core.shutdown()


async def test_a_failed_open_releases_the_home(tmp_path: Path) -> None:
    with pytest.raises(StratamemError):
        await assemble.open_local_core(
            tmp_path, embedding__provider="local", embedding__model="/does/not/exist"
        )
    core = await assemble.open_local_core(tmp_path, embedding__provider="none")
    await core.shutdown()


def test_optional_models_load_to_none_when_not_configured() -> None:
    assert assemble.load_embedder({"provider": "none"}) is None
    assert assemble.load_llm({"llm": {"provider": ""}}) is None


async def test_open_core_owns_the_home_when_free(tmp_path: Path) -> None:
    async with open_core(tmp_path, embedding__provider="none") as core:
        assert isinstance(core, LocalCore)


def test_the_local_engine_does_not_import_the_connection_layer() -> None:
    """local -> engine modules never reach server.connect (which sits above them)."""
    code = (
        "import sys, stratamem.core.local, stratamem.core.engine.assemble\n"
        "assert 'stratamem.core.server.connect' not in sys.modules\n"
        "assert 'stratamem.core.opening' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "first", ["stratamem.core.storage.lance", "stratamem.core.hotindex", "stratamem.core.local"]
)
def test_low_layers_import_on_their_own(first: str) -> None:
    """Storage (and the hot index under it) import first without an import cycle through retrieval."""
    subprocess.run([sys.executable, "-c", f"import {first}"], check=True)
