"""The one table of memory tools: every host's schema comes from it, every argument is checked by it."""

from __future__ import annotations

from typing import Any

import pytest

from stratamem.contract.dtos import TopK
from stratamem.contract.errors import StratamemError
from stratamem.contract.hostkit import tools


def test_six_tools_with_the_parameter_rules_of_hosts_md() -> None:
    assert tools.TOOL_NAMES == (
        "memos_search",
        "memos_get",
        "memos_timeline",
        "memos_environment",
        "memos_skill_list",
        "memos_skill_get",
    )
    s = {d["name"]: d["parameters"] for d in tools.definitions()}
    assert s["memos_search"]["required"] == ["query"]
    assert s["memos_search"]["properties"]["maxResults"]["maximum"] == 50
    assert s["memos_search"]["properties"]["tier2topK"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 100,
        "description": "traces and episodes to return",
    }
    assert s["memos_get"]["properties"]["kind"]["enum"] == ["trace", "policy", "world_model"]
    assert s["memos_timeline"]["properties"]["limit"]["maximum"] == 100
    assert s["memos_environment"]["properties"]["limit"]["maximum"] == 30
    assert s["memos_skill_list"]["properties"]["status"]["enum"] == [
        "candidate",
        "active",
        "archived",
    ]
    assert [d["concurrencySafe"] for d in tools.definitions()] == [True] * 5 + [False]
    no_tiers = tools.SPECS["memos_search"].parameters(tools.TIER_PARAMS)["properties"]
    assert not set(tools.TIER_PARAMS) & set(no_tiers)


@pytest.mark.parametrize(
    ("name", "args", "code", "field"),
    [
        ("memos_search", {}, "invalid_argument", "query"),
        ("memos_search", {"query": "  "}, "invalid_argument", "query"),
        ("memos_search", {"query": "x", "maxResults": 0}, "invalid_argument", "maxResults"),
        ("memos_search", {"query": "x", "maxResults": 51}, "invalid_argument", "maxResults"),
        ("memos_search", {"query": "x", "tier2topK": 101}, "invalid_argument", "tier2topK"),
        ("memos_search", {"query": "x", "tier1topK": True}, "invalid_argument", "tier1topK"),
        ("memos_search", {"query": "x", "sessionScope": "yes"}, "invalid_argument", "sessionScope"),
        ("memos_get", {"id": "t1", "kind": "skill"}, "invalid_argument", "kind"),
        ("memos_get", {"id": 7}, "invalid_argument", "id"),
        ("memos_timeline", {"episodeId": ""}, "invalid_argument", "episodeId"),
        ("memos_timeline", {"episodeId": "e", "limit": 0}, "invalid_argument", "limit"),
        ("memos_environment", {"limit": 31}, "invalid_argument", "limit"),
        ("memos_skill_list", {"status": "deleted"}, "invalid_argument", "status"),
        ("memos_skill_list", {"limit": 2.5}, "invalid_argument", "limit"),
        ("memos_skill_get", {"id": ""}, "invalid_argument", "id"),
        ("memos_skill_get", ["id"], "invalid_argument", "args"),
        ("memos_fly", {}, "unknown_method", None),
    ],
)
def test_bad_arguments_are_typed_errors_naming_the_field(
    name: str, args: Any, code: str, field: str | None
) -> None:
    with pytest.raises(StratamemError) as err:
        tools.validate(name, args)
    assert err.value.code == code
    assert err.value.details.get("field") == field


def test_defaults_are_filled_and_integral_floats_accepted() -> None:
    assert tools.validate("memos_timeline", {"episodeId": "e", "limit": 3.0}) == {
        "episodeId": "e",
        "limit": 3,
    }
    assert tools.validate("memos_get", {"id": "t"}) == {"id": "t", "kind": "trace"}
    assert tools.validate("memos_environment", None) == {"query": None, "limit": 5}


@pytest.mark.parametrize(
    ("args", "top_k"),
    [
        ({}, None),
        ({"maxResults": 4}, TopK(4, 4, 4)),
        ({"tier2topK": 3}, TopK(0, 3, 0)),
        ({"maxResults": 4, "tier3topK": 1}, TopK(4, 4, 1)),
    ],
)
def test_max_results_fills_unset_tiers(args: dict[str, Any], top_k: TopK | None) -> None:
    assert tools.search_top_k(args) == top_k


def test_tool_call_arguments_are_decoded_when_json_and_kept_otherwise() -> None:
    assert tools.parse_arguments('{"query": "x"}') == {"query": "x"}
    assert tools.parse_arguments("not json") == "not json"
    assert tools.parse_arguments({"a": 1}) == {"a": 1}
    assert tools.parse_arguments(None) is None
