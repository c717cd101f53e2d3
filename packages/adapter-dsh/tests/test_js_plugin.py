"""The plugin's JS modules agree with the host kit: one spool format, one table of memory tools."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from stratamem.contract.hostkit.spool import record_name
from stratamem.contract.hostkit.tools import TOOL_NAMES
from stratamem.dsh.install import install_plugin, plugin_entry
from stratamem.dsh.spool import open_spool, spool_dir

NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node runs the plugin's modules")

WRITE = """
import { putSync, recordName, spoolDir } from %s
const home = process.argv[1]
const keys = ['dsh-1:1', 'dsh-1:2', 'sessión:3', 'dsh-1:1']
for (const key of keys) putSync(spoolDir(home), { key, turn: 1, user_text: 'ünïcode ' + key })
console.log(JSON.stringify(keys.map(recordName)))
"""


@NODE
def test_what_the_plugin_writes_the_service_claims(tmp_path: Path) -> None:
    module = json.dumps((plugin_entry().parent / "spool.mjs").as_uri())
    out = subprocess.run(
        ["node", "--input-type=module", "-e", WRITE % module, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    names = json.loads(out)
    assert names == [record_name(k) for k in ("dsh-1:1", "dsh-1:2", "sessión:3", "dsh-1:1")]
    assert sorted(p.name for p in spool_dir(tmp_path).iterdir()) == sorted(set(names))
    records = open_spool(tmp_path).claim()
    assert sorted(r.key for r in records) == ["dsh-1:1", "dsh-1:2", "sessión:3"]
    assert {r.data["user_text"] for r in records} >= {"ünïcode sessión:3"}


LOAD_TOOLS = """
import { loadTools } from %s
console.log(JSON.stringify(loadTools()))
"""


@NODE
def test_the_installed_plugin_registers_the_host_kits_six_tools(tmp_path: Path) -> None:
    install_plugin(tmp_path, run_npm=False)
    module = json.dumps((tmp_path / "tools.mjs").as_uri())
    out = subprocess.run(
        ["node", "--input-type=module", "-e", LOAD_TOOLS % module],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    tools = {t["name"]: t for t in json.loads(out)}
    assert tuple(tools) == TOOL_NAMES
    search = tools["memos_search"]["parameters"]
    assert search["query"]["required"] is True and "required" not in search["maxResults"]
    assert search["tier2topK"]["maximum"] == 100
    assert tools["memos_get"]["parameters"]["kind"]["enum"] == ["trace", "policy", "world_model"]
    assert [t["concurrencySafe"] for t in tools.values()] == [True] * 5 + [False]
