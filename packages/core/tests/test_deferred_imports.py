"""LanceDB's unused REST client body is not run when the engine imports LanceDB (cold start-up).

Each check runs in a fresh interpreter: the pytest process has long imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_PROBE = textwrap.dedent(
    """
    import json, sys
    first = sys.argv[1]
    __import__(first)
    import stratamem.core.storage.lance  # the engine's store
    import lancedb
    api = sorted(m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api"))
    db = lancedb.connect(sys.argv[2])
    t = db.create_table("t", data=[{"id": i, "text": w} for i, w in
                                   enumerate(["kitten on the train", "a colour chart", "museum visit"])])
    t.create_fts_index("text")
    hits = [r["id"] for r in t.search("kitten", query_type="fts").limit(3).to_list()]
    import lance_namespace_urllib3_client as client
    used = [client.__version__, client.ApiClient.__name__]
    from lance_namespace_urllib3_client import TableApi
    used.append(TableApi.__name__)
    print(json.dumps({"api_at_import": api, "hits": hits, "used": used}))
    """
)


@pytest.mark.parametrize(
    "first", ["stratamem.core.engine.assemble", "stratamem.core.retrieval.channels", "lancedb"]
)
def test_the_engine_imports_lancedb_without_the_rest_clients_api_modules(
    first: str, tmp_path: Path
) -> None:
    if first == "lancedb":
        first = "stratamem.core"  # the package alone, then LanceDB directly (a plugin's order)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, first, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["api_at_import"] == []  # 9 API modules (+ package) were imported eagerly before
    assert got["hits"] == [0]  # LanceDB (tables, FTS) works with the body deferred
    assert got["used"][1:] == ["ApiClient", "TableApi"]  # the client still works when asked for
    assert got["used"][0]
