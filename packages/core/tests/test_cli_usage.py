"""The CLI as a newcomer meets it, through the installed ``stratamem`` entry point (a subprocess):
options before or after the command, a mistyped home is an error, a host's memories are found
without knowing its namespace, the ingest format is in ``--help``, errors read cleanly in a log,
``serve`` says where things live and how to stop it, ``health`` reads on a terminal."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

STRATAMEM = str(Path(sys.executable).with_name("stratamem"))
HERMES = {"agent_kind": "hermes", "profile_id": "default"}
TURNS = [
    {
        "session": "s1",
        "user": "My sister Alice lives in Lisbon and works as a marine biologist.",
        "assistant": "Noted: Alice is a marine biologist in Lisbon.",
        "ts": 1_700_000_000_000,
        "namespace": HERMES,
    },
    {
        "session": "s2",
        "user": "Deploy the api with docker compose",
        "assistant": "Deployed the api.",
        "ts": 1_700_000_100_000,
        "namespace": HERMES,
    },
]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAMEM_")}
    return {**env, "STRATAMEM_EMBEDDING__PROVIDER": "none"}


def cli(*argv: str, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [STRATAMEM, *argv], env=_env(), capture_output=True, text=True, timeout=300
    )
    if check is not None:
        assert done.returncode == check, (argv, done.returncode, done.stdout, done.stderr)
    return done


def _jsonl(path: Path, turns: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hermes_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home whose memories are all in ``hermes/default`` (as the Hermes adapter writes them)."""
    from stratamem.contract.hostkit.client import stop_service

    root = tmp_path_factory.mktemp("cli")
    home = root / "home"
    cli("ingest", str(_jsonl(root / "t.jsonl", TURNS)), "--home", str(home))
    yield home
    stop_service(home, 20)  # the commands' resident service


def test_global_options_work_before_or_after_the_command(hermes_home: Path) -> None:
    before = cli(
        "--home", str(hermes_home), "--namespace", "hermes/default", "--json", "search", "sister"
    )
    after = cli(
        "search", "sister", "--namespace", "hermes/default", "--home", str(hermes_home), "--json"
    )
    hits = json.loads(after.stdout)["hits"]
    assert hits and "Lisbon" in hits[0]["snippet"]
    assert json.loads(before.stdout)["hits"] == hits


def test_search_on_a_host_home_finds_memories_in_every_namespace_and_names_them(
    hermes_home: Path,
) -> None:
    text = cli("--home", str(hermes_home), "search", "where does my sister live")
    first = text.stdout.splitlines()[0]
    assert "hermes/default" in first and "Lisbon" in text.stdout
    data = json.loads(cli("search", "sister", "--home", str(hermes_home), "--json").stdout)
    assert data["namespaces"] == ["hermes/default"]
    assert data["hits"][0]["namespace"] == "hermes/default"
    # an explicit namespace still isolates
    other = cli("search", "sister", "--home", str(hermes_home), "--namespace", "cli/default")
    assert other.stdout == "" and "no memories found (searched cli/default)" in other.stderr


def test_search_json_does_not_name_the_agents_tools(hermes_home: Path) -> None:
    out = cli("search", "deploy the api", "--home", str(hermes_home), "--json").stdout
    assert json.loads(out)["hits"]
    assert "memos_" not in out


def test_timeline_and_export_find_the_host_namespace(hermes_home: Path) -> None:
    done = cli("export", "--home", str(hermes_home))
    traces = json.loads(done.stdout)["traces"]
    assert len(traces) == 2 and "hermes/default" in done.stderr
    episode = traces[0]["episode_id"]
    shown = cli("timeline", episode, "--home", str(hermes_home))
    assert "is in namespace hermes/default" in shown.stderr and "[user]" in shown.stdout
    # a time a reader can read (local ISO), not epoch milliseconds
    first = min(int(t["ts"]) for t in traces if t["episode_id"] == episode)
    when = datetime.fromtimestamp(first / 1000).astimezone().isoformat(timespec="seconds")
    assert shown.stdout.startswith(when) and str(first) not in shown.stdout
    missing = cli("timeline", "ep_nope", "--home", str(hermes_home), check=1)
    assert "cli/default, hermes/default" in missing.stderr


@pytest.mark.parametrize(
    "command", [["search", "x"], ["timeline", "ep_x"], ["export"], ["health"], ["doctor"]]
)
def test_read_commands_on_a_missing_home_fail_clearly_and_create_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    typo = tmp_path / "no-such-home"
    done = cli(*command, "--home", str(typo), check=2)
    assert f"no Stratamem home at {typo}" in done.stderr and "--create" in done.stderr
    assert not typo.exists()


def test_create_makes_the_missing_home(tmp_path: Path) -> None:
    home = tmp_path / "new-home"
    done = cli("search", "anything", "--home", str(home), "--create")
    assert "no memories found" in done.stderr
    assert (home / "data").is_dir()


def test_ingest_help_documents_the_format_with_an_example_that_ingests(tmp_path: Path) -> None:
    help_text = cli("ingest", "--help").stdout
    for key in ("session", "user", "assistant", "ts", "tool_calls", "namespace"):
        assert re.search(rf"^\s+{key}\s", help_text, re.M), key
    example = [ln.strip() for ln in help_text.splitlines() if ln.strip().startswith('{"session"')]
    assert len(example) == 2
    src = tmp_path / "turns.jsonl"
    src.write_text("\n".join(example) + "\n", encoding="utf-8")
    done = cli("ingest", str(src), "--home", str(tmp_path / "h"))
    assert "ingested 2 of 2 lines" in done.stderr and "0 bad" in done.stderr


def test_import_of_a_jsonl_file_points_to_ingest(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "turns.jsonl", TURNS)
    done = cli("import", str(src), "--home", str(tmp_path / "h"), check=2)
    assert f"use `stratamem ingest {src}`" in done.stderr


def test_without_a_terminal_errors_have_no_blank_lines(tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(TURNS[0]) + "\nnot json\n" + '{"x": 1}\n', encoding="utf-8")
    done = cli("ingest", str(src), "--home", str(tmp_path / "h"), check=1)
    lines = done.stderr.splitlines()
    assert "" not in lines, done.stderr
    assert [ln.split(":")[0] for ln in lines if ln.startswith("line ")] == ["line 2", "line 3"]


def test_health_reads_on_a_terminal_and_is_json_with_the_flag(hermes_home: Path) -> None:
    text = cli("health", "--home", str(hermes_home)).stdout
    assert text.splitlines()[0] == "status:    ok"
    assert f"home:      {hermes_home}" in text and "traces 2" in text
    data = json.loads(cli("--json", "health", "--home", str(hermes_home)).stdout)
    assert data["ok"] is True and data["counts"]["traces"] == 2


def test_serve_says_where_data_and_logs_live_and_how_to_stop(tmp_path: Path) -> None:
    home = tmp_path / "served"
    proc = subprocess.Popen(
        [STRATAMEM, "serve", "--home", str(home)],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())  # blocks until serve is up (or exits)
        assert ready["ready"] is True
        deadline = time.monotonic() + 60
        while not (home / "run" / "serve.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 0, err
    assert f"data:    {home}/data" in err and f"logs:    {home}/logs" in err
    assert "Ctrl-C" in err and f"stratamem stop --home {home}" in err
    assert f"kill -TERM {proc.pid}" in err


def test_the_readmes_jsonl_example_ingests(tmp_path: Path) -> None:
    readme = Path(__file__).resolve().parents[3] / "README.md"
    block = re.search(r"```jsonl\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    assert block is not None, "the root README documents the ingest format with an example"
    src = tmp_path / "turns.jsonl"
    src.write_text(block.group(1), encoding="utf-8")
    done = cli("ingest", str(src), "--home", str(tmp_path / "h"))
    assert "ingested 2 of 2 lines" in done.stderr and "0 bad" in done.stderr


def test_doctor_gets_table_statistics_from_the_running_service(hermes_home: Path) -> None:
    """The CLI is a thin client of the home's service; only that process may open the store, so it
    answers for it (it used to say "table statistics are available in its process")."""
    report = json.loads(cli("doctor", "--home", str(hermes_home)).stdout)
    assert report["tables"]["traces"]["rows"] == 2
    assert report["sqlite_bytes"] > 0
    assert "note" not in report


def test_reembed_logs_one_line_per_table_without_a_terminal(tmp_path: Path) -> None:
    from stratamem.contract.hostkit.client import stop_service

    home = tmp_path / "h"
    cli("ingest", str(_jsonl(tmp_path / "t.jsonl", TURNS)), "--home", str(home))
    stop_service(home, 20)  # reembed rewrites the store itself
    done = cli("reembed", "--home", str(home))
    assert "\r" not in done.stderr and "" not in done.stderr.splitlines(), repr(done.stderr)
    assert "traces: 2/2 re-embedded" in done.stderr
    assert json.loads(done.stdout)["reembedded"]


def test_timeline_takes_the_trace_id_that_search_prints(hermes_home: Path) -> None:
    """`timeline --help` sends the user to `stratamem search` for the id, and search prints trace
    ids: timeline takes one and shows that trace's episode (it said `episode_not_found`)."""
    data = json.loads(cli("search", "sister", "--home", str(hermes_home), "--json").stdout)
    hit = data["hits"][0]
    assert hit["ref_kind"] == "trace"
    shown = cli("timeline", hit["ref_id"], "--home", str(hermes_home))
    assert "Lisbon" in shown.stdout and hit["ref_id"] in shown.stdout
    assert "is in episode ep_" in shown.stderr
    missing = cli("timeline", "tr_nope", "--home", str(hermes_home), check=1)
    assert "[episode_not_found]" in missing.stderr and "tr_nope" in missing.stderr


def test_export_to_a_file_is_readable_by_its_owner_only(hermes_home: Path, tmp_path: Path) -> None:
    """The bundle holds every memory of a home whose own files are 0600; a 022 umask must not make
    it world-readable, and an existing file is replaced with the same mode."""
    for out in (tmp_path / "bundle.json", tmp_path / "old.json"):
        if out.name == "old.json":
            out.write_text("{}")
            out.chmod(0o644)
        done = subprocess.run(
            [STRATAMEM, "export", "--home", str(hermes_home), "--out", str(out)],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
            umask=0o022,
        )
        assert done.returncode == 0, done.stderr
        assert out.stat().st_mode & 0o777 == 0o600, oct(out.stat().st_mode)
        assert len(json.loads(out.read_text())["traces"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle.json", "old.json"]


def test_export_to_a_missing_directory_is_a_typed_error(hermes_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "bundle.json"
    done = cli("export", "--home", str(hermes_home), "--out", str(out), check=2)
    assert done.stderr.startswith(f"stratamem: error [invalid_argument] cannot write {out}")
    assert "Traceback" not in done.stderr and not out.parent.exists()


def test_memory_reads_refuse_a_mistyped_home_and_a_write_makes_a_private_one(
    tmp_path: Path,
) -> None:
    """`stratamem memory search` on a typo'd --home used to create <typo>/workspace (0755) and answer
    `[]`; now it fails like `search`, and a write makes a whole 0700 home that later reads accept."""
    root = tmp_path / "project"
    root.mkdir()
    typo = tmp_path / "no-such-home"
    for action in (["search", "x"], ["files"], ["read"], ["recall-search", "x"]):
        done = cli("memory", "--root", str(root), *action, "--home", str(typo), check=2)
        assert f"no Stratamem home at {typo}" in done.stderr
        assert not typo.exists()
    home = tmp_path / "home"
    cli(
        "memory",
        "--root",
        str(root),
        "write",
        "--content",
        "- deploys go to fly.io\n",
        "--home",
        str(home),
    )
    assert home.stat().st_mode & 0o777 == 0o700 and (home / "data").is_dir()
    found = cli("memory", "--root", str(root), "search", "fly.io", "--home", str(home))
    assert "deploys go to fly.io" in found.stdout


def test_a_service_that_cannot_start_is_explained_by_its_own_error(tmp_path: Path) -> None:
    """A thin client that starts the service names the service's typed start-up error; it quoted
    the last log line, here the caret under a YAML excerpt (`    ^ (line: 4)`)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("version: 1\nserver:\n  idle_exit_s: [1\n")
    done = cli("search", "x", "--home", str(home), check=1)
    assert done.stderr.startswith("stratamem: error [transport_closed]"), done.stderr
    assert "exited with 2: [config_invalid]" in done.stderr
    assert "config.yaml is not valid YAML" in done.stderr


def test_health_names_the_namespaces_that_hold_memories(hermes_home: Path) -> None:
    """It printed `namespace: unknown/default`, the service's placeholder, which holds nothing."""
    text = cli("health", "--home", str(hermes_home)).stdout
    assert "namespaces: hermes/default" in text.splitlines()
    assert "unknown/default" not in text
    data = json.loads(cli("--json", "health", "--home", str(hermes_home)).stdout)
    assert data["namespaces"] == ["hermes/default"]


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_a_closed_pipe_ends_the_command_quietly(hermes_home: Path, unbuffered: str) -> None:
    """`stratamem search … | head -1`: the reader leaves early; that printed a BrokenPipeError
    traceback. The reader here closes before the command writes anything."""
    proc = subprocess.Popen(
        [STRATAMEM, "search", "sister", "--home", str(hermes_home)],
        env={**_env(), "PYTHONUNBUFFERED": unbuffered},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_doctor_names_config_keys_that_are_not_settings(tmp_path: Path) -> None:
    """A typo in config.yaml is ignored (the service only logs it to serve.log, which a thin-client
    user never reads): doctor lists it in its report and warns on stderr."""
    from stratamem.contract.hostkit.client import stop_service

    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(
        "server:\n  idle_exit: 5\nretreival:\n  tier2_top_k: 3\nretrieval:\n  tier2_top_k: 4\n"
    )
    try:
        cli("ingest", str(_jsonl(tmp_path / "t.jsonl", TURNS)), "--home", str(home))
        done = cli("doctor", "--home", str(home))
    finally:
        stop_service(home, 20)
    assert json.loads(done.stdout)["config_unknown_keys"] == ["server.idle_exit", "retreival"]
    assert "'server.idle_exit' is not a setting" in done.stderr
    assert "'retreival' is not a setting" in done.stderr
    assert "tier2_top_k" not in done.stderr


def test_a_client_started_service_leaves_no_loose_file_in_run(hermes_home: Path) -> None:
    """The home is 0700 with 0600 files; ``run/start.json`` (written by the client that starts the
    service) was 0644."""
    files = [p for p in (hermes_home / "run").iterdir() if p.is_file()]
    assert any(p.name == "start.json" for p in files), files
    loose = {p.name: oct(p.stat().st_mode & 0o777) for p in files if p.stat().st_mode & 0o077}
    assert loose == {}
