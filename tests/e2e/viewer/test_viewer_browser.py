"""The viewer in a real headless Chromium against a running ``stratamem serve`` with a seeded home.

Overview lists each start-up event once; each view loads without console errors (screenshots land in
``.artifacts/viewer/``); the retrieval preview shows the hit ``stratamem search`` returns; a Settings edit
reaches config.yaml; a trace edited in Memories is searchable by its new summary; and a live event
reaches Overview within a second of a turn.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
REPO = HERE.parents[2]
ARTIFACTS = REPO / ".artifacts" / "viewer"
CHROMIUM = Path("/usr/bin/chromium")
SEED = [
    ("ops", "Where are the kafka brokers configured?", "The kafka brokers live in brokers.yaml."),
    ("ops", "How do we rotate the nginx logs?", "logrotate runs daily from /etc/logrotate.d."),
    ("cook", "What goes into a good pesto?", "Basil, pine nuts, parmesan, garlic, olive oil."),
]


def _bin() -> str:
    exe = Path(sys.executable).parent / "stratamem"
    return str(exe) if exe.exists() else "stratamem"


def _deps_dir() -> Path:
    """npm install once per package.json into a cache dir outside the repo."""
    digest = hashlib.sha256((HERE / "package.json").read_bytes()).hexdigest()[:12]
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "stratamem-e2e"
    target = base / f"viewer-{digest}"
    if not (target / "node_modules" / "playwright-core").exists():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "package.json", target / "package.json")
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=target,
            check=True,
            timeout=600,
            env={**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
        )
    return target


def _jsonl(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    t = int(time.time() * 1000) - 60_000
    with path.open("w", encoding="utf-8") as fh:
        for i, (session, user, assistant) in enumerate(rows):
            fh.write(
                json.dumps({"session": session, "user": user, "assistant": assistant, "ts": t + i})
                + "\n"
            )
    return path


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_bin(), "--home", str(home), *args], capture_output=True, text=True, timeout=180
    )


@pytest.fixture(scope="module")
def node_deps() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm not installed (scripts/ci-system-deps.sh installs them)")
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (scripts/ci-system-deps.sh installs it)")
    return _deps_dir()


@pytest.fixture
def served_home(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    home.mkdir()
    (home / "config.yaml").write_text(
        f"# seeded by the viewer e2e test\nversion: 1\nworkspace:\n  roots: [{json.dumps(str(project))}]\n",
        encoding="utf-8",
    )
    # serve first: CLI commands are thin clients of the home's service (an ingest before it would
    # start that service itself, and this explicit serve would find the home owned)
    proc = subprocess.Popen(
        [_bin(), "serve", "--home", str(home), "--viewer", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    info: dict[str, object] = {}
    end = time.monotonic() + 120
    while time.monotonic() < end and not info:
        line = proc.stdout.readline()
        if not line:
            break
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if data.get("ready"):
            info = data
    if not info:
        proc.kill()
        pytest.fail("stratamem serve did not become ready")
    try:
        seeded = _cli(home, "ingest", str(_jsonl(tmp_path / "seed.jsonl", SEED)), "--no-progress")
        assert seeded.returncode == 0, seeded.stderr
        yield home, str(info["viewer_url"])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _search(home: Path, query: str) -> list[dict[str, object]]:
    out = _cli(home, "search", query, "--json")
    assert out.returncode == 0, out.stderr
    hits: list[dict[str, object]] = json.loads(out.stdout)["hits"]
    return hits


def test_every_view_in_chromium_and_the_edits_it_makes(
    node_deps: Path, served_home: tuple[Path, str], tmp_path: Path
) -> None:
    home, url = served_home
    query = "kafka brokers configuration"
    expected = _search(home, query)
    assert expected, "the seeded home must answer the query"
    pesto = [h for h in _search(home, "pesto basil") if h["ref_kind"] == "trace"]
    assert pesto
    trace_id = str(pesto[0]["ref_id"])
    new_summary = "platypus-sauce recipe card"
    assert not any(h["ref_id"] == trace_id for h in _search(home, "platypus-sauce"))
    turn = _jsonl(tmp_path / "turn.jsonl", [("live", "Is the live feed working?", "Yes, live.")])

    run = subprocess.run(
        [
            "node",
            str(HERE / "viewer.e2e.mjs"),
            url,
            str(ARTIFACTS),
            str(home),
            str(turn),
            query,
            trace_id,
            new_summary,
        ],
        env={**os.environ, "VIEWER_E2E_DEPS": str(node_deps), "STRATAMEM_BIN": _bin()},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])

    assert result["consoleErrors"] == []

    # Overview lists each event once: the page loads /api/events/recent, then opens the stream after
    # the newest seq it shows (it used to open /events bare and get every start-up event again)
    items = result["feedItems"]
    assert any(i["type"] == "system.started" for i in items), items
    keys = [(i["type"], i["ts"], i["payload"]) for i in items]
    assert len(keys) == len(set(keys)), keys
    assert len({i["seq"] for i in items}) == len(items)
    assert result["eventStreams"] and all("since=" in u for u in result["eventStreams"])
    # the overview shows the capture journal's set-aside entries next to its backlog
    assert result["kpis"].get("Journal set aside") == "0", result["kpis"]
    assert set(result["views"]) == {
        "overview",
        "memories",
        "tasks",
        "policies",
        "world-models",
        "skills",
        "retrieval",
        "workspace",
        "logs",
        "settings",
    }
    for view in result["views"]:
        assert (ARTIFACTS / f"{view}.png").stat().st_size > 0

    # the preview shows the hit `stratamem search` returns for the same query
    assert expected[0]["ref_id"] in result["retrievalRefs"]

    # the Settings edit is in config.yaml (comments kept); the invalid one is not, and was explained
    config = (home / "config.yaml").read_text(encoding="utf-8")
    assert "tier2_top_k: 7" in config
    assert "# seeded by the viewer e2e test" in config
    assert "mmr_lambda" not in config
    assert "between" in result["settingsFieldError"]

    # the trace edited in Memories is searchable with its new summary
    assert any(h["ref_id"] == trace_id for h in _search(home, "platypus-sauce"))

    # a live event reached Overview within a second of the turn (bound: deadline + 1 s)
    assert result["ingestExit"] == 0
    assert 0 <= result["liveLatencyMs"] <= 2000
