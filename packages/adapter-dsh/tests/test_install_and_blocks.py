"""``stratamem dsh install``, the context block cap, the namespace resolver, tool argument checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from stratamem.contract.dtos import ListQuery
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.spool import record_name
from stratamem.core import LocalCore
from stratamem.core.cli import main
from stratamem.dsh.bridge import DshBridge
from stratamem.dsh.install import DEFAULT_CONFIG, bundle_patch, plugin_entry
from stratamem.dsh.namespace import SessionInfo, resolve_namespace
from stratamem.dsh.recall import recall_budget_ms
from stratamem.dsh.spool import spool_dir
from stratamem.hosts.dsh.v1 import dsh_pb2

INFO = SessionInfo(ref="o1", session_id="dsh-9", agent_preset="reviewer", cwd="/repo")


def test_install_prints_a_patch_row_with_every_key_and_the_dsh_home(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh"))
    assert main(["dsh", "install", "--profile", "work", "--skip-npm"]) == 0
    out = capsys.readouterr().out
    installed = tmp_path / "dsh" / "stratamem" / "plugin"
    assert f'name: "{installed / "index.mjs"}"' in out
    assert (installed / "index.mjs").read_bytes() == plugin_entry().read_bytes()
    fds = descriptor_pb2.FileDescriptorSet.FromString((installed / "dsh.desc").read_bytes())
    assert [f.package for f in fds.file] == ["stratamem.dsh.v1"]
    assert f'home: "{tmp_path / "dsh" / "stratamem"}"' in out
    assert 'profileId: "work"' in out and "recallTimeoutMs: 3000" in out
    for key in DEFAULT_CONFIG:
        assert f"      {key}: " in out


def test_every_rpc_the_plugin_calls_is_in_the_schema_it_loads() -> None:
    source = "\n".join(p.read_text() for p in plugin_entry().parent.glob("*.mjs"))
    called = set(re.findall(r"\.call\('(\w+)'", source))
    service = dsh_pb2.DESCRIPTOR.services_by_name["DshHost"]
    assert called and called <= {m.name for m in service.methods}
    assert "wire.mjs" not in source  # no hand-written protobuf codec left


def test_install_writes_the_patch_file_and_refuses_a_bad_profile(tmp_path: Path) -> None:
    target = tmp_path / "out" / "stratamem.patch.yml"
    argv = ["dsh", "install", "--dsh-home", str(tmp_path), "--write", str(target), "--no-npm"]
    assert main(argv) == 0
    assert target.read_text() == bundle_patch(dsh_home=str(tmp_path))
    with pytest.raises(StratamemError) as err:
        bundle_patch(profile="../evil")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT


def test_recall_budget_is_capped_at_3000_and_floored_at_100() -> None:
    assert [recall_budget_ms(v) for v in (None, 0, 50, 500, 3000, 9000)] == [
        3000,
        3000,
        100,
        500,
        3000,
        3000,
    ]


def test_namespace_resolver_maps_preset_cwd_and_session() -> None:
    ns = resolve_namespace(INFO)
    assert (ns.agent_kind, ns.profile_id, ns.workspace_path, ns.session_key) == (
        "dsh",
        "reviewer",
        "/repo",
        "dsh-9",
    )
    bare = resolve_namespace(SessionInfo(ref="o", session_id="s", profile_id="team"))
    assert (bare.profile_id, bare.workspace_path) == ("team", None)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("memos_search", {}),
        ("memos_search", {"query": "x", "maxResults": 0}),
        ("memos_search", {"query": "x", "tier2topK": 101}),
        ("memos_search", {"query": "x", "sessionScope": "yes"}),
        ("memos_get", {"id": "t1", "kind": "skill"}),
        ("memos_timeline", {"episodeId": "e", "limit": 0}),
        ("memos_environment", {"limit": 31}),
        ("memos_skill_list", {"status": "deleted"}),
        ("memos_skill_get", {"id": ""}),
    ],
)
async def test_bad_tool_arguments_are_typed_errors_that_change_nothing(
    bridge: DshBridge, core: LocalCore, name: str, args: dict[str, object]
) -> None:
    with pytest.raises(StratamemError) as err:
        await bridge.tool(name, args, INFO)
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    assert await core.list_traces(ListQuery(include_all_namespaces=True)) == []


async def test_unknown_tool_is_refused(bridge: DshBridge) -> None:
    with pytest.raises(StratamemError) as err:
        await bridge.tool("memos_delete_everything", {}, INFO)
    assert err.value.code == ErrorCode.UNKNOWN_METHOD


async def test_torn_or_foreign_spool_records_are_set_aside(
    bridge: DshBridge, core: LocalCore
) -> None:
    spool = spool_dir(core.home)
    spool.mkdir(parents=True, exist_ok=True)
    (spool / record_name("a")).write_bytes(b"not json")
    (spool / record_name("b")).write_text(json.dumps(["a", "list"]))
    (spool / record_name("c")).write_text(json.dumps({"key": "c", "turn": 1}))  # no session
    (spool / f".{record_name('d')}.1.x.tmp").write_bytes(b'{"key": "torn')  # killed mid-write
    assert bridge.poll_spool() == 0
    assert bridge.queues.pending == 0
    assert len(bridge.spool.dead()) == 3 and bridge.spool.backlog() == 0
