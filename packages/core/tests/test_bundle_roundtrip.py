"""Export covers every namespace of a home (unless one is named) and says what it wrote; import is
idempotent by trace id with exact counts, into the same home or another; ingest re-runs count
lines already ingested as such."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratamem.core.cli import main


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


ALPHA = [
    {"session": "a1", "user": "The alpha vault code is 4417.", "assistant": "Noted.", "ts": 1},
    {"session": "a1", "user": "Alpha's ferry leaves at 06:40.", "assistant": "Ok.", "ts": 2},
]
BETA = [
    {"session": "b1", "user": "Beta keeps bees on the roof.", "assistant": "Nice.", "ts": 3},
    {"session": "b2", "user": "Beta's bike is a green Brompton.", "assistant": "Ok.", "ts": 4},
]


def _home(tmp_path: Path, name: str) -> Path:
    home = tmp_path / name
    for ns, lines in (("hermes/default", ALPHA), ("dsh/pb", BETA)):
        src = _write(tmp_path / f"{ns.replace('/', '_')}.jsonl", lines)
        assert (
            main(["--home", str(home), "--namespace", ns, "ingest", str(src), "--no-progress"]) == 0
        )
    return home


def _export(home: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["--home", str(home), *extra, "export"]) == 0
    got = capsys.readouterr()
    return json.loads(got.out), got.err


def _import(home: Path, bundle: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["--home", str(home), "import", str(bundle)]) == 0
    return json.loads(capsys.readouterr().out)


def test_export_covers_every_namespace_and_import_is_idempotent_by_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _home(tmp_path, "a")
    bundle, said = _export(a, capsys)
    owners = {
        (t["owner"]["owner_agent_kind"], t["owner"]["owner_profile_id"]) for t in bundle["traces"]
    }
    assert len(bundle["traces"]) == 4 and owners == {("hermes", "default"), ("dsh", "pb")}
    assert "exported 4 traces" in said and "dsh/pb" in said and "hermes/default" in said
    # a named namespace exports that namespace only
    only, _ = _export(a, capsys, "--namespace", "dsh/pb")
    assert sorted(t["user_text"] for t in only["traces"]) == sorted(x["user"] for x in BETA)

    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    # back into the same home: every trace is already there
    assert _import(a, path, capsys) == {"imported": 0, "skipped": 4}
    assert len(_export(a, capsys)[0]["traces"]) == 4
    # into a fresh home: exact counts, then nothing new on a second run
    b = tmp_path / "b"
    assert _import(b, path, capsys) == {"imported": 4, "skipped": 0}
    assert _import(b, path, capsys) == {"imported": 0, "skipped": 4}
    again, _ = _export(b, capsys)
    assert len(again["traces"]) == 4
    # each trace went back to its own namespace
    mine, _ = _export(b, capsys, "--namespace", "hermes/default")
    assert sorted(t["user_text"] for t in mine["traces"]) == sorted(x["user"] for x in ALPHA)
    # and the re-export of the imported home imports back into it as nothing new
    path.write_text(json.dumps(again))
    assert _import(b, path, capsys) == {"imported": 0, "skipped": 4}
    # ... and into the home it came from (b gave the traces new ids): still nothing new
    assert {t["id"] for t in again["traces"]}.isdisjoint(t["id"] for t in bundle["traces"])
    assert _import(a, path, capsys) == {"imported": 0, "skipped": 4}
    assert len(_export(a, capsys)[0]["traces"]) == 4


def test_ingest_rerun_reports_lines_already_ingested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, src = tmp_path / "h", _write(tmp_path / "t.jsonl", ALPHA)
    capsys.readouterr()
    assert main(["--home", str(home), "ingest", str(src), "--no-progress"]) == 0
    assert "ingested 2 of 2 lines (0 already ingested, 0 bad)" in capsys.readouterr().err
    assert main(["--home", str(home), "ingest", str(src), "--no-progress"]) == 0
    assert "ingested 0 of 2 lines (2 already ingested, 0 bad)" in capsys.readouterr().err


def test_a_turn_with_tool_calls_round_trips_through_another_home_as_nothing_new(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a turn's tool step and reply share its time, so the trace's time is one ms after the turn's;
    # an import that replayed the trace's time as the turn's moved it 1 ms on every hop, and the
    # copy coming back through another home was not known (issue 16 item 10, seen from outside)
    lines = [
        {"session": "s2", "user": "Deploy the api", "assistant": "Deployed.", "ts": 100,
         "tool_calls": [{"name": "shell", "input": {"cmd": "compose up"}, "output": "started"}]},
        {"session": "s3", "user": "My tea is genmaicha.", "assistant": "Lovely.", "ts": 200},
    ]  # fmt: skip
    a, src = tmp_path / "a", _write(tmp_path / "t.jsonl", lines)
    assert main(["--home", str(a), "ingest", str(src), "--no-progress"]) == 0
    first, _ = _export(a, capsys)
    path = tmp_path / "a.json"
    path.write_text(json.dumps(first))
    b = tmp_path / "b"
    assert _import(b, path, capsys) == {"imported": 2, "skipped": 0}
    second, _ = _export(b, capsys)

    # the copy keeps the turn's time and the trace's time
    def times(bundle: dict) -> list[tuple[str, int, int]]:
        return sorted((t["user_text"], t["turn_id"], t["ts"]) for t in bundle["traces"])

    assert times(second) == times(first)
    path.write_text(json.dumps(second))
    assert _import(a, path, capsys) == {"imported": 0, "skipped": 2}
    assert len(_export(a, capsys)[0]["traces"]) == 2
