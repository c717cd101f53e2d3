"""The JS plugin in a real Node process: registration per mode, the synchronous failure hint, schemas."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from stratamem.contract.hostkit.tools import definitions
from stratamem.openclaw.install import plugin_files

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

SCRIPT = r"""
const mod = await import(process.argv[2]);
const out = {};
for (const mode of ["full", "discovery", "cli-metadata"]) {
  const calls = [];
  const hooks = {};
  mod.default.register({
    registrationMode: mode, pluginConfig: { socket: "/nonexistent/sock", serveCommand: [] }, logger: {},
    on: (name, fn) => { calls.push("on:" + name); hooks[name] = fn; },
    registerTool: (factory, opts) => calls.push("tool:" + opts.name + ":" + factory({}).name),
    registerMemoryCapability: (cap) => calls.push("cap:" + cap.promptBuilder({ availableTools: new Set(["memos_search"]) }).length),
    registerService: (svc) => calls.push("service:" + svc.id),
  });
  out[mode] = calls;
  if (mode === "discovery") {
    const persist = hooks["tool_result_persist"];
    const ctx = { runId: "r1", toolName: "exec" };
    const fail = { toolName: "exec", message: { role: "toolResult", isError: true, content: [{ type: "text", text: "exit 1" }] } };
    out.persist = [persist(fail, ctx), persist(fail, ctx), persist(fail, ctx),
      persist({ toolName: "exec", message: { role: "toolResult", isError: false, content: "ok" } }, ctx),
      persist(fail, { runId: "r2", toolName: "exec" })];
    // fail-open: no server answers on the socket, the prompt build returns nothing
    out.prompt = (await hooks["before_prompt_build"]({ prompt: "hi", messages: [] }, { runId: "x", sessionKey: "s" })) ?? null;
  }
}
out.schemas = Object.fromEntries(mod.TOOL_SPECS.map((s) => [s.name, s.parameters]));
console.log(JSON.stringify(out));
process.exit(0);
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    script = tmp_path_factory.mktemp("js") / "drive.mjs"
    script.write_text(SCRIPT)
    plugin = tmp_path_factory.mktemp("plugin")  # laid out as `stratamem openclaw install` does
    for rel, data in plugin_files().items():
        (plugin / rel).parent.mkdir(parents=True, exist_ok=True)
        (plugin / rel).write_bytes(data)
    proc = subprocess.run(
        [str(NODE), str(script), str(plugin / "index.js")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_full_mode_registers_six_tools_the_capability_hooks_and_a_service(result: dict) -> None:
    calls = result["full"]
    assert [c for c in calls if c.startswith("tool:memos_")] == [
        f"tool:{n}:{n}"
        for n in (
            "memos_search",
            "memos_get",
            "memos_timeline",
            "memos_environment",
            "memos_skill_list",
            "memos_skill_get",
        )
    ]
    for hook in (
        "before_prompt_build",
        "agent_end",
        "after_tool_call",
        "tool_result_persist",
        "session_end",
        "subagent_spawned",
    ):
        assert f"on:{hook}" in calls
    assert "service:stratamem" in calls
    assert any(c.startswith("cap:") for c in calls)


def test_discovery_mode_has_hooks_but_no_service_and_cli_metadata_has_no_hooks(
    result: dict,
) -> None:
    assert "service:stratamem" not in result["discovery"]
    assert "on:before_prompt_build" in result["discovery"]
    assert not any(c.startswith("on:") for c in result["cli-metadata"])


def test_the_third_consecutive_failure_gets_the_memos_search_hint_synchronously(
    result: dict,
) -> None:
    first, second, third, success, other_run = result["persist"]
    assert first is None and second is None
    assert "memos_search" in third["message"]["content"][-1]["text"]
    assert third["message"]["content"][0]["text"] == "exit 1"
    assert success is None and other_run is None


def test_prompt_build_fails_open_when_no_server_answers(result: dict) -> None:
    assert result["prompt"] is None


def test_tool_schemas_are_the_host_kits_and_follow_hosts_md(result: dict) -> None:
    s = result["schemas"]
    assert s == {d["name"]: d["parameters"] for d in definitions()}
    assert s["memos_search"]["required"] == ["query"]
    max_results = s["memos_search"]["properties"]["maxResults"]
    assert (max_results["type"], max_results["minimum"], max_results["maximum"]) == (
        "integer",
        1,
        50,
    )
    assert s["memos_get"]["properties"]["kind"]["enum"] == ["trace", "policy", "world_model"]
    assert s["memos_timeline"]["properties"]["limit"]["maximum"] == 100
    assert s["memos_environment"]["properties"]["limit"]["maximum"] == 30
    assert s["memos_skill_list"]["properties"]["status"]["enum"] == [
        "candidate",
        "active",
        "archived",
    ]
