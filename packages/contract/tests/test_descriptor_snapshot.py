"""Contract evolution is add-only: the committed descriptor snapshot guards every released name."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.descriptors import breaking_changes, main, snapshot

SNAPSHOT = Path(__file__).parent / "snapshots" / "descriptors.json"
REFRESH = "python -m stratamem.contract.descriptors --write packages/contract/tests/snapshots/descriptors.json"


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    return json.loads(SNAPSHOT.read_text("utf-8"))


@pytest.fixture(scope="module")
def current() -> dict[str, Any]:
    return snapshot()


def test_installed_contract_keeps_everything_the_snapshot_released(
    committed: dict[str, Any], current: dict[str, Any]
) -> None:
    problems = breaking_changes(committed, current)
    assert not problems, "breaking contract change:\n" + "\n".join(problems)


def test_snapshot_covers_the_core_services(committed: dict[str, Any]) -> None:
    assert set(committed["services"]) >= {
        "stratamem.v1.MemoryService",
        "stratamem.v1.WorkspaceMemoryService",
        "stratamem.v1.HostLlm",
    }
    assert committed["services"]["stratamem.v1.MemoryService"]["SubscribeEvents"][
        "server_streaming"
    ]
    assert "stratamem.v1.Trace" in committed["messages"]


def _mutated(base: dict[str, Any], edit: Any) -> dict[str, Any]:
    new = copy.deepcopy(base)
    edit(new)
    return new


def _rename_field(s: dict[str, Any]) -> None:
    fields = s["messages"]["stratamem.v1.Trace"]["fields"]
    fields["trace_id"] = fields.pop("id")


def _renumber_field(s: dict[str, Any]) -> None:
    s["messages"]["stratamem.v1.Trace"]["fields"]["summary"]["number"] = 99


def _drop_field(s: dict[str, Any]) -> None:
    del s["messages"]["stratamem.v1.Trace"]["fields"]["reflection"]


def _drop_message(s: dict[str, Any]) -> None:
    del s["messages"]["stratamem.v1.WorldModelEntry"]


def _drop_rpc(s: dict[str, Any]) -> None:
    del s["services"]["stratamem.v1.MemoryService"]["Timeline"]


def _stream_change(s: dict[str, Any]) -> None:
    s["services"]["stratamem.v1.MemoryService"]["SubscribeEvents"]["server_streaming"] = False


def _retype_field(s: dict[str, Any]) -> None:
    s["messages"]["stratamem.v1.Trace"]["fields"]["ts"]["type"] = 9  # string


def _make_repeated(s: dict[str, Any]) -> None:
    s["messages"]["stratamem.v1.Trace"]["fields"]["summary"]["repeated"] = True


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (_rename_field, "stratamem.v1.Trace.id (= 1) was renamed to trace_id"),
        (_renumber_field, "stratamem.v1.Trace.summary changed number"),
        (_drop_field, "stratamem.v1.Trace.reflection (= 12) was removed"),
        (_drop_message, "message stratamem.v1.WorldModelEntry was removed"),
        (_drop_rpc, "rpc stratamem.v1.MemoryService.Timeline was removed"),
        (_stream_change, "SubscribeEvents changed its signature"),
        (_retype_field, "stratamem.v1.Trace.ts changed type"),
        (_make_repeated, "stratamem.v1.Trace.summary changed repeated"),
    ],
)
def test_removing_renaming_or_renumbering_is_reported(
    current: dict[str, Any], edit: Any, fragment: str
) -> None:
    problems = breaking_changes(current, _mutated(current, edit))
    assert any(fragment in p for p in problems), problems


def test_enum_value_removal_and_renumbering_are_reported() -> None:
    old = {"messages": {}, "services": {}, "enums": {"x.Color": {"RED": 0, "BLUE": 1}}}
    assert breaking_changes(old, old) == []
    gone = {**old, "enums": {"x.Color": {"RED": 0}}}
    moved = {**old, "enums": {"x.Color": {"RED": 0, "BLUE": 2}}}
    dropped = {**old, "enums": {}}
    assert "x.Color.BLUE (= 1) was removed" in breaking_changes(old, gone)[0]
    assert "renumbered: 1 → 2" in breaking_changes(old, moved)[0]
    assert "enum x.Color was removed" in breaking_changes(old, dropped)[0]


def test_adding_fields_messages_rpcs_and_enum_values_is_fine(current: dict[str, Any]) -> None:
    def add(s: dict[str, Any]) -> None:
        s["messages"]["stratamem.v1.Trace"]["fields"]["new_field"] = {
            "number": 100,
            "type": 9,
            "type_name": "",
            "repeated": False,
            "presence": True,
            "oneof": "",
        }
        s["messages"]["stratamem.v1.Brand"] = {"fields": {}}
        s["services"]["stratamem.v1.MemoryService"]["Brand"] = {
            "input": "stratamem.v1.Brand",
            "output": "stratamem.v1.Brand",
            "client_streaming": False,
            "server_streaming": False,
        }
        s["enums"]["stratamem.v1.Kind"] = {"A": 0}

    assert breaking_changes(current, _mutated(current, add)) == []


def test_cli_refreshes_deliberately_and_checks(tmp_path: Path, current: dict[str, Any]) -> None:
    target = tmp_path / "snap.json"
    assert main([str(target), "--write"]) == 0
    assert json.loads(target.read_text("utf-8")) == json.loads(json.dumps(current))
    assert main([str(target), "--check"]) == 0
    broken = _mutated(
        current,
        lambda s: s["messages"]["stratamem.v1.Trace"]["fields"].update(
            {
                "gone": {
                    "number": 777,
                    "type": 9,
                    "type_name": "",
                    "repeated": False,
                    "presence": False,
                    "oneof": "",
                }
            }
        ),
    )
    target.write_text(json.dumps(broken), "utf-8")
    assert main([str(target)]) == 1, f"refresh with: {REFRESH}"
