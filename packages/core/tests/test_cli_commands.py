"""The built-in CLI commands, run as a user would (``main([...])`` in-process, one real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stratamem.core.cli import main


def _write(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


FACTS = [
    {
        "session": "s1",
        "user": "My sister Alice lives in Lisbon and works as a marine biologist.",
        "assistant": "Noted: Alice is a marine biologist in Lisbon.",
        "ts": 1_700_000_000_000,
    },
    {
        "session": "s2",
        "user": "Deploy the api with docker compose",
        "assistant": "Deployed the api.",
        "ts": 1_700_000_100_000,
        "tool_calls": [
            {"name": "shell", "input": {"cmd": "docker compose up -d"}, "output": "started"}
        ],
    },
    {
        "session": "s3",
        "user": "The staging database password rotates every Friday.",
        "assistant": "Got it.",
        "ts": 1_700_000_200_000,
    },
]


@pytest.fixture(scope="module")
def facts_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """FACTS ingested once into a home the read-only tests below share (each home costs a resident
    service start); a test that writes to a home (ingest, import, reembed) makes its own."""
    from stratamem.contract.hostkit.client import stop_service

    root = tmp_path_factory.mktemp("facts")
    home = root / "h"
    assert main(["--home", str(home), "ingest", str(_write(root / "t.jsonl", FACTS))]) == 0
    yield home
    stop_service(home, 20)  # the commands' resident service


def _search(home: Path, query: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    capsys.readouterr()
    assert main(["--home", str(home), *extra, "search", query, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ingest_reports_bad_lines_by_number_skips_them_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _write(
        tmp_path / "t.jsonl",
        [FACTS[0], "not json", {"session": "s", "user": "  ", "ts": 1}, {"x": 1}, FACTS[2]],
    )
    assert main(["--home", str(tmp_path / "h"), "ingest", str(src), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "line 2:" in err and "line 3:" in err and "line 4:" in err
    assert "line 1:" not in err and "line 5:" not in err
    out = _search(tmp_path / "h", "where does my sister live", capsys)
    assert "Lisbon" in out["hits"][0]["snippet"]


def test_ingest_rerun_skips_lines_already_ingested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, src = tmp_path / "h", _write(tmp_path / "t.jsonl", FACTS)
    assert main(["--home", str(home), "ingest", str(src), "--no-progress"]) == 0
    assert main(["--home", str(home), "ingest", str(src), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["--home", str(home), "export"]) == 0
    bundle = json.loads(capsys.readouterr().out)
    assert sorted(t["user_text"] for t in bundle["traces"]) == sorted(f["user"] for f in FACTS)


def test_search_json_has_the_documented_shape_and_tool_call_turns(
    facts_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _search(facts_home, "how did we deploy the api", capsys, "--namespace", "cli/default")
    assert set(out) == {"namespaces", "hits", "tier_latency_ms"}
    assert set(out["tier_latency_ms"]) == {"tier1", "tier2", "tier3"}
    hit = out["hits"][0]
    assert set(hit) == {"namespace", "tier", "ref_kind", "ref_id", "score", "snippet"}
    assert hit["tier"] == 2 and hit["ref_kind"] == "trace"
    assert "docker compose" in hit["snippet"]
    scores = [h["score"] for h in out["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert out["namespaces"] == ["cli/default"] and hit["namespace"] == "cli/default"


def test_search_limit_is_validated_and_zero_hits_is_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "h"
    assert main(["--home", str(home), "search", "x", "--limit", "0"]) == 2
    assert main(["--home", str(home), "search", "x", "--limit", "51"]) == 2
    out = _search(home, "anything at all", capsys, "--create")
    assert out["hits"] == []


def test_namespaces_are_isolated_in_search_and_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "h"
    src = _write(tmp_path / "t.jsonl", FACTS[:1])
    assert main(["--home", str(home), "--namespace", "alpha/one", "ingest", str(src)]) == 0
    assert (
        _search(home, "where does my sister live", capsys, "--namespace", "beta/one")["hits"] == []
    )
    hits = _search(home, "where does my sister live", capsys, "--namespace", "alpha/one")["hits"]
    assert hits and "Lisbon" in hits[0]["snippet"]
    assert main(["--home", str(home), "--namespace", "bad/ns/x", "search", "q"]) == 1


def test_timeline_replays_an_episode_in_order_and_rejects_unknown_ids(
    facts_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = facts_home
    capsys.readouterr()
    assert main(["--home", str(home), "export"]) == 0
    trace = next(
        t for t in json.loads(capsys.readouterr().out)["traces"] if t["session_id"] == "s2"
    )
    assert main(["--home", str(home), "timeline", trace["episode_id"], "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [t["id"] for t in lines] == [trace["id"]]
    assert lines[0]["tool_calls"][0]["name"] == "shell"
    assert main(["--home", str(home), "timeline", "ep_doesnotexist"]) == 1
    assert "episode_not_found" in capsys.readouterr().err


def test_export_then_import_into_a_fresh_home_restores_searchable_traces_idempotently(
    facts_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = facts_home, tmp_path / "b"
    bundle = tmp_path / "bundle.json"
    assert main(["--home", str(a), "export", "--out", str(bundle)]) == 0
    capsys.readouterr()
    assert main(["--home", str(b), "import", str(bundle)]) == 0
    assert json.loads(capsys.readouterr().out) == {"imported": 3, "skipped": 0}
    assert main(["--home", str(b), "import", str(bundle)]) == 0
    capsys.readouterr()
    assert main(["--home", str(b), "export"]) == 0
    assert len(json.loads(capsys.readouterr().out)["traces"]) == 3
    assert "Lisbon" in _search(b, "sister's city", capsys)["hits"][0]["snippet"]
    (tmp_path / "bad.json").write_text('{"version": 9}')
    assert main(["--home", str(b), "import", str(tmp_path / "bad.json")]) == 1


def test_doctor_reports_tables_and_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stop_services: Callable[[Path], None]
) -> None:
    home = tmp_path / "h"
    assert main(["--home", str(home), "ingest", str(_write(tmp_path / "t.jsonl", FACTS))]) == 0
    stop_services(tmp_path)  # table statistics need the store: maintenance mode, no service
    capsys.readouterr()
    assert main(["--home", str(home), "--offline", "doctor"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tables"]["traces"]["rows"] == 3
    assert report["journal_backlog"] == 0
    assert {"version", "fragments", "unindexed_rows"} <= set(report["tables"]["traces"])
    assert report["sqlite_bytes"] > 0


def test_reembed_rewrites_every_vector_and_search_still_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "h"
    assert main(["--home", str(home), "ingest", str(_write(tmp_path / "t.jsonl", FACTS))]) == 0
    capsys.readouterr()
    assert main(["--home", str(home), "reembed"]) == 1  # the home's service holds the store
    assert "stratamem stop" in capsys.readouterr().err
    assert main(["--home", str(home), "stop"]) == 0
    assert main(["--home", str(home), "reembed"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reembedded"]["traces"] == 3 and out["dimension"] == 384
    assert "Lisbon" in _search(home, "where does my sister live", capsys)["hits"][0]["snippet"]


def test_a_thousand_turns_ingest_then_search_offline_from_a_fresh_home(tmp_path: Path) -> None:
    topics = ["kubernetes pods", "postgres vacuum", "react hooks", "terraform state", "git rebase"]
    lines: list[object] = [
        {
            "session": f"s{i // 10}",
            "user": f"Question {i} about {topics[i % 5]}: how do I fix case {i}?",
            "assistant": f"For {topics[i % 5]} case {i}, check the config and restart.",
            "ts": 1_700_000_000_000 + i * 60_000,
        }
        for i in range(999)
    ]
    lines.append(
        {
            "session": "fact",
            "user": "Remember that our billing service listens on port 8443 behind haproxy.",
            "assistant": "Noted.",
            "ts": 1_700_100_000_000,
        }
    )
    src = _write(tmp_path / "k.jsonl", lines)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STRATAMEM_HOME": str(tmp_path / "home")}
    run = [sys.executable, "-m", "stratamem.core.cli"]
    ing = subprocess.run([*run, "ingest", str(src)], env=env, capture_output=True, text=True)
    assert ing.returncode == 0, ing.stderr
    assert "ingested 1000 of 1000" in ing.stderr
    res = subprocess.run(
        [*run, "search", "which port does billing use", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    hits = json.loads(res.stdout)["hits"]
    assert "8443" in hits[0]["snippet"]


def test_ingest_rerun_writes_no_new_episodes_or_turns(tmp_path: Path) -> None:
    import sqlite3

    home, src = tmp_path / "h", _write(tmp_path / "t.jsonl", FACTS)

    def counts() -> tuple[int, int]:
        c = sqlite3.connect(home / "data" / "stratamem.db")
        try:
            return (
                c.execute("SELECT count(*) FROM episodes").fetchone()[0],
                c.execute("SELECT count(*) FROM episode_turns").fetchone()[0],
            )
        finally:
            c.close()

    assert main(["--home", str(home), "ingest", str(src), "--no-progress"]) == 0
    before = counts()
    assert main(["--home", str(home), "ingest", str(src), "--no-progress"]) == 0
    assert counts() == before
