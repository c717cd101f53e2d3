"""``stratamem dsh``: named by the adapter's plugin module, its module imported only when chosen (the
checks: ``tests/support/adapter_command.py``)."""

from __future__ import annotations

from adapter_command import check_named_then_imported_when_chosen


def test_the_command_is_listed_and_its_module_imported_only_when_chosen() -> None:
    check_named_then_imported_when_chosen(
        "dsh", "stratamem.dsh.command", "print or write the DSH bundle patch for the"
    )
