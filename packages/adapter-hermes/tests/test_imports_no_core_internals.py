"""The adapter is a thin client: no module of ``stratamem.hermes`` imports anything from
``stratamem.core`` but the public plugin marker (the checks: ``tests/support/adapter_imports.py``)."""

from __future__ import annotations

from adapter_imports import core_imports_in_source, core_modules_loaded_on_import

import stratamem.hermes as adapter


def test_no_module_imports_core_internals_anywhere_in_its_source() -> None:
    assert core_imports_in_source(adapter) == []


def test_importing_every_module_in_a_fresh_interpreter_loads_only_the_plugin_marker() -> None:
    extra = core_modules_loaded_on_import(adapter)
    assert extra == {}, (
        f"core modules loaded (module -> first adapter module importing it): {extra}"
    )
