import json
from pathlib import Path

import pytest

from stratamem.contract.errors import StratamemError
from stratamem.hermes import tools
from stratamem.hermes.mirror import apply_to_memory_md
from stratamem.hermes.settings import load_settings, save_settings


def test_the_prefetch_budget_defaults_to_six_seconds_and_is_capped_at_seven(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings(hermes_home).prefetch_budget_s == 6.0
    assert load_settings(hermes_home).home == hermes_home / "stratamem"
    monkeypatch.setenv("STRATAMEM_HERMES_PREFETCH_BUDGET_S", "30")
    assert load_settings(hermes_home).prefetch_budget_s == 7.0


def test_save_config_validates_before_writing(hermes_home: Path) -> None:
    with pytest.raises(StratamemError) as err:
        save_settings({"prefetch_budget_s": "soon"}, str(hermes_home))
    assert err.value.code == "config_invalid"
    with pytest.raises(StratamemError):
        save_settings({"nope": 1}, str(hermes_home))
    assert not (hermes_home / "stratamem" / "hermes.yaml").exists()
    assert load_settings(hermes_home).lend_llm is False  # opt-in
    path = save_settings({"prefetch_budget_s": 3, "lend_llm": "true"}, str(hermes_home))
    assert path.stat().st_mode & 0o777 == 0o600
    settings = load_settings(hermes_home)
    assert (settings.prefetch_budget_s, settings.lend_llm) == (3.0, True)


def test_tool_schemas_are_six_openai_functions_with_object_parameters() -> None:
    names = [s["name"] for s in tools.TOOL_SCHEMAS]
    assert sorted(names) == [
        "memos_environment",
        "memos_get",
        "memos_search",
        "memos_skill_get",
        "memos_skill_list",
        "memos_timeline",
    ]
    for schema in tools.TOOL_SCHEMAS:
        assert schema["parameters"]["type"] == "object"
        assert set(schema["parameters"]["required"]) <= set(schema["parameters"]["properties"])
        json.dumps(schema)


@pytest.mark.parametrize(
    ("name", "args", "code"),
    [
        ("memos_search", {}, "invalid_argument"),
        ("memos_search", {"query": "x", "maxResults": 0}, "invalid_argument"),
        ("memos_search", {"query": "x", "sessionScope": "yes"}, "invalid_argument"),
        ("memos_get", {"id": "t", "kind": "planet"}, "invalid_argument"),
        ("memos_timeline", {"episodeId": ""}, "invalid_argument"),
        ("memos_skill_list", {"limit": 2.5}, "invalid_argument"),
        ("memos_fly", {}, "unknown_method"),
        ("memos_skill_get", ["id"], "invalid_argument"),
    ],
)
def test_bad_tool_arguments_are_typed_errors(name: str, args: object, code: str) -> None:
    with pytest.raises(StratamemError) as err:
        tools.validate(name, args)
    assert err.value.code == code


def test_memory_md_entries_are_added_once_replaced_and_removed() -> None:
    text = apply_to_memory_md("# Memory\n", "add", "User likes  teal", "")
    assert text == "# Memory\n- User likes teal\n"
    assert apply_to_memory_md(text, "add", "User likes teal", "") == text
    text = apply_to_memory_md(text, "replace", "User likes green", "likes teal")
    assert text == "# Memory\n- User likes green\n"
    assert apply_to_memory_md(text, "remove", "", "likes green") == "# Memory\n"
    with pytest.raises(StratamemError) as err:
        apply_to_memory_md(text, "remove", "", "absent entry")
    assert err.value.code == "not_found"
