"""The plugin's JS spool writer and the host kit's Python spool agree on one format."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from stratamem.contract.hostkit.spool import record_name
from stratamem.dsh.install import plugin_entry
from stratamem.dsh.spool import open_spool, spool_dir

WRITE = """
import { putSync, recordName, spoolDir } from %s
const home = process.argv[1]
const keys = ['dsh-1:1', 'dsh-1:2', 'sessión:3', 'dsh-1:1']
for (const key of keys) putSync(spoolDir(home), { key, turn: 1, user_text: 'ünïcode ' + key })
console.log(JSON.stringify(keys.map(recordName)))
"""


@pytest.mark.skipif(
    shutil.which("node") is None, reason="node is needed to run the plugin's writer"
)
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
