"""Config: defaults table, deep merge, unknown keys kept, typed errors, 0600, comment-preserving writes."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from stratamem.contract.errors import StratamemError
from stratamem.core.config import defaults, ensure_config_file, load_config, patch_config_file
from stratamem.core.config.loader import unknown_keys
from stratamem.core.home import prepare_home, resolve_home


def test_defaults_carry_the_reference_effective_values() -> None:
    d = defaults()
    assert d["retrieval"]["tier1_top_k"] == 3
    assert d["retrieval"]["tier2_top_k"] == 5
    assert d["retrieval"]["rrf_constant"] == 60
    assert d["retrieval"]["mmr_lambda"] == 0.7
    assert d["retrieval"]["min_trace_sim"] == 0.25
    assert d["retrieval"]["relative_threshold_floor"] == 0.2
    assert d["session"]["merge_max_gap_ms"] == 7_200_000
    assert d["algorithm"]["lightweight_memory"]["enabled"] is True
    assert d["embedding"]["provider"] == "local"
    assert d["llm"]["provider"] == ""


def test_user_values_merge_over_defaults_and_unknown_keys_are_kept(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "retrieval:\n  tier2_top_k: 7\nmy_plugin:\n  colour: blue\n"
    )
    cfg = load_config(tmp_path)
    assert cfg["retrieval"]["tier2_top_k"] == 7
    assert cfg["retrieval"]["tier1_top_k"] == 3
    assert cfg["my_plugin"] == {"colour": "blue"}


def test_a_setting_nothing_reads_is_reported_as_unknown(tmp_path: Path) -> None:
    # storage.fts_tokenizer ("trigram"/"cjk", from the MemOS seed) was a default nothing read: the
    # FTS index is built with LanceDB's default tokenizer. A user setting it is now told so.
    (tmp_path / "config.yaml").write_text("storage:\n  fts_tokenizer: cjk\n")
    assert unknown_keys(tmp_path) == ["storage.fts_tokenizer"]
    assert "fts_tokenizer" not in defaults()["storage"]


def test_invalid_value_is_config_invalid_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("retrieval:\n  mmr_lambda: lots\n")
    with pytest.raises(StratamemError) as err:
        load_config(tmp_path)
    assert err.value.code == "config_invalid"
    assert "retrieval.mmr_lambda" in err.value.message


def test_out_of_range_value_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("capture:\n  max_text_chars: 10\n")
    with pytest.raises(StratamemError) as err:
        load_config(tmp_path)
    assert err.value.details["key"] == "capture.max_text_chars"


def test_corrupt_yaml_is_config_invalid(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("retrieval: [unclosed\n  : :\n")
    with pytest.raises(StratamemError) as err:
        load_config(tmp_path)
    assert err.value.code == "config_invalid"


def test_overrides_apply_with_dotted_keys(tmp_path: Path) -> None:
    cfg = load_config(tmp_path, {"storage.ann_threshold_rows": 10, "retrieval__tier3_top_k": 0})
    assert cfg["storage"]["ann_threshold_rows"] == 10
    assert cfg["retrieval"]["tier3_top_k"] == 0


def test_config_file_is_created_private(tmp_path: Path) -> None:
    path = ensure_config_file(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_patch_preserves_comments_and_order(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "# my settings\nretrieval:\n  # keep five\n  tier2_top_k: 5\nllm:\n  provider: ''  # none\n"
    )
    cfg = patch_config_file(tmp_path, {"retrieval.tier2_top_k": 9, "storage": {"ann_ef": 64}})
    text = path.read_text()
    assert "# my settings" in text and "# keep five" in text and "# none" in text
    assert text.index("retrieval") < text.index("llm") < text.index("storage")
    assert cfg["retrieval"]["tier2_top_k"] == 9 and cfg["storage"]["ann_ef"] == 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_invalid_patch_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("retrieval:\n  tier2_top_k: 5\n")
    with pytest.raises(StratamemError):
        patch_config_file(tmp_path, {"retrieval.tier2_top_k": "many"})
    assert path.read_text() == "retrieval:\n  tier2_top_k: 5\n"


def test_home_resolution_order(tmp_path: Path) -> None:
    assert resolve_home(tmp_path / "x", env={}) == tmp_path / "x"
    assert resolve_home(env={"STRATAMEM_HOME": str(tmp_path)}) == tmp_path
    assert resolve_home(host="hermes", env={"HERMES_HOME": str(tmp_path)}) == tmp_path / "stratamem"
    assert resolve_home(host="dsh", env={"DSH_HOME": str(tmp_path)}) == tmp_path / "stratamem"
    assert resolve_home(host="openclaw", env={}).parts[-2:] == (".openclaw", "stratamem")
    assert resolve_home(env={}).name == ".stratamem"


def test_unwritable_home_is_path_not_writable(tmp_path: Path) -> None:
    # a regular file in the way makes the home unwritable even for root (modes do not stop root)
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with pytest.raises(StratamemError) as err:
        prepare_home(blocker / "home")
    assert err.value.code == "path_not_writable"


def test_embedding_threads_and_batch_are_table_keys_with_ranges(tmp_path: Path) -> None:
    # the local embedder read ``embedding.threads`` without the table knowing it: it was reported
    # as unknown, and a bad value reached ``int()`` as an untyped error
    (tmp_path / "config.yaml").write_text("embedding:\n  threads: 2\n  batch_size: 8\n")
    assert unknown_keys(tmp_path) == []
    assert load_config(tmp_path)["embedding"]["threads"] == 2
    for bad in ("threads: 0", "threads: lots", "batch_size: 0"):
        (tmp_path / "config.yaml").write_text(f"embedding:\n  {bad}\n")
        with pytest.raises(StratamemError) as err:
            load_config(tmp_path)
        assert err.value.code == "config_invalid"
        assert err.value.details["key"] == "embedding." + bad.split(":")[0]
