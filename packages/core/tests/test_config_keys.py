"""One defaults table: every config key the core reads is defined in ``config/defaults.py``, values
come from the loaded config or that table (never a literal fallback at the call site), and reading
a key the table lacks raises."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from stratamem.core.config import DEFAULTS, Section, UnknownSetting, load_config, lookup, section
from stratamem.core.storage.lance import LanceStore

SRC = Path(__file__).resolve().parents[1] / "src" / "stratamem" / "core"


def _sources() -> Iterator[tuple[Path, str]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path, path.read_text(encoding="utf-8")


def _table(path: str) -> Mapping[str, Any]:
    node: Any = DEFAULTS
    for part in path.split("."):
        node = node[part]
    return node  # type: ignore[no-any-return]


def _reads(text: str) -> Iterator[tuple[str, str]]:
    """(section, key) pairs read by ``text`` through the typed accessors and plain indexing."""
    for sect, key in re.findall(r'lookup\([^,()]+, "([\w.]+)", "(\w+)"\)', text):
        yield sect, key
    for sect, key in re.findall(r'\bcfg\("(\w+)", "(\w+)"\)', text):  # LearningContext.cfg
        yield sect, key
    for key, sect in re.findall(r'\bsetting\([^,()]+, "(\w+)"(?:, "(\w+)")?\)', text):
        yield sect or "retrieval", key
    for sect, key in re.findall(r'(?:config|cfg)\["(\w+)"\]\["(\w+)"\]', text):
        if isinstance(DEFAULTS.get(sect), dict):
            yield sect, key
    # names bound to a Section: ``x = Section("storage", ...)``, then ``x.get_int("key")``/``x["key"]``
    for name, sect in re.findall(r'([\w.]+) = Section\("([\w.]+)"', text):
        esc = re.escape(name)
        for key in re.findall(esc + r'\.get_\w+\("(\w+)"\)', text):
            yield sect, key
        for key in re.findall(esc + r'\["(\w+)"\]', text):
            yield sect, key
    for sect, key in re.findall(r'Section\("([\w.]+)"[^\n]*?\)\["(\w+)"\]', text):
        yield sect, key


def test_every_key_the_core_reads_is_in_the_defaults_table() -> None:
    seen: set[tuple[str, str]] = set()
    missing: list[str] = []
    for path, text in _sources():
        for sect, key in _reads(text):
            seen.add((sect, key))
            try:
                table = _table(sect)
            except KeyError:
                missing.append(f"{path.relative_to(SRC)}: section {sect}")
                continue
            if key not in table:
                missing.append(f"{path.relative_to(SRC)}: {sect}.{key}")
    assert not missing, missing
    assert len(seen) > 100  # the scan really found the reads (guards the patterns themselves)
    assert ("storage", "cleanup_older_than_s") in seen and ("logging", "file_backups") in seen


def test_no_literal_fallbacks_on_config_reads() -> None:
    """``cfg.get("key", 300)`` hides a second default beside the table (one disagreed: 3600 vs 300)."""
    pattern = re.compile(
        r"\b(?:cfg|config|self\.cfg|self\.config|section|sect|server_cfg)"
        r'(?:\.get\("\w+", *\{\}\))?\.get\("(\w+)", *[^)\s]'
    )
    found = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path, text in _sources()
        for n, line in enumerate(text.splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found


def test_a_section_reads_values_over_the_table_and_refuses_unknown_keys() -> None:
    storage = Section("storage", {"ann_ef": 7})
    assert storage.get_int("ann_ef") == 7
    assert storage.get_int("cleanup_older_than_s") == DEFAULTS["storage"]["cleanup_older_than_s"]
    assert storage.get("optimize_after_rows") == DEFAULTS["storage"]["optimize_after_rows"]
    with pytest.raises(UnknownSetting):
        storage["cleanup_older_than"]
    with pytest.raises(UnknownSetting):
        storage.get("no_such_key", 1)
    with pytest.raises(UnknownSetting):
        Section("no_such_section")
    assert (
        Section("embedding", {"cache": {"max_items": 5}}).section("cache").get_int("max_items") == 5
    )
    assert section({"embedding": {"cache": {}}}, "embedding.cache").get_bool("enabled") is True
    assert lookup({}, "journal", "apply_batch_max") == DEFAULTS["journal"]["apply_batch_max"]
    assert (
        "ann_ef" in storage and "nope" not in storage and len(storage) == len(DEFAULTS["storage"])
    )


def test_the_loaded_config_has_every_table_key(tmp_path: Path) -> None:
    cfg = load_config(tmp_path, {})

    def walk(ref: Mapping[str, Any], got: Mapping[str, Any], prefix: str) -> None:
        for key, value in ref.items():
            assert key in got, f"{prefix}{key}"
            if isinstance(value, dict) and value:
                walk(value, got[key], f"{prefix}{key}.")

    walk(DEFAULTS, cfg, "")


def test_the_store_prunes_versions_with_the_tables_window(tmp_path: Path) -> None:
    """lance.py used to fall back to 3600 s where the table says otherwise (now 60 s)."""
    store = LanceStore(tmp_path, 8, "none", {})
    assert (
        store.cfg.get_int("cleanup_older_than_s")
        == 60
        == DEFAULTS["storage"]["cleanup_older_than_s"]
    )
