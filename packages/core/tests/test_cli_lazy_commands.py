"""A fresh ``stratamem search`` against a running service loads the search command and the thin
client, nothing else: every other command is named with its help for ``--help`` and imported only
when chosen (bench/results/startup-session19.md). Each run is a fresh interpreter, as a user's shell
tool or a host's hook starts one on every turn."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stratamem.core.cli import main
from stratamem.core.plugins import collect

FACT = "The spare key to the boathouse hangs behind the barometer."

#: runs ``main(argv)`` and writes the exit code and every imported module's name to a file
_CHILD = """
import json, sys
from stratamem.core.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as exc:  # --help
    code = exc.code
with open(sys.argv[1], "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""

#: what a served search has no use for: the engine and what it imports, logging and tracing set-up,
#: the YAML reader (config and allocator are the service's), other commands' modules
NOT_NEEDED = (
    "lancedb",
    "pyarrow",
    "numpy",
    "onnxruntime",
    "structlog",
    "opentelemetry",
    "ruamel",
    "importlib.metadata",
    "stratamem.core.engine",
    "stratamem.core.storage",
    "stratamem.core.telemetry",
    "stratamem.core.local",
    "stratamem.core.config.loader",
    "stratamem.core.server",
    "stratamem.core.viewer.command",
    "stratamem.core.workspace.commands",
    "stratamem.core.commands.ingest",
    "stratamem.core.commands.timeline",
    "stratamem.core.commands.doctor",
    "stratamem.core.commands.reembed",
    "stratamem.core.commands.journal",
    "stratamem.core.commands.bundle",
    "stratamem.hermes.command",
    "stratamem.openclaw.command",
    "stratamem.dsh.command",
)


def _fresh(tmp: Path, *argv: str) -> tuple[int, list[str], subprocess.CompletedProcess[str]]:
    out = tmp / f"modules-{len(list(tmp.glob('modules-*')))}.json"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(out), *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.exists(), done.stderr[-3000:]
    data = json.loads(out.read_text())
    return int(data["code"] or 0), list(data["modules"]), done


def _unneeded(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(NOT_NEEDED)]


@pytest.fixture(scope="module")
def served_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from stratamem.contract.hostkit.client import stop_service

    root = tmp_path_factory.mktemp("served")
    home = root / "h"
    src = root / "t.jsonl"
    src.write_text(json.dumps({"session": "s1", "user": FACT, "assistant": "Noted.", "ts": 1}))
    assert main(["--home", str(home), "ingest", str(src), "--no-progress"]) == 0  # starts it
    yield home
    stop_service(home, 20)


def test_a_served_search_imports_no_other_command_nor_the_engine(
    served_home: Path, tmp_path: Path
) -> None:
    query = "Where is the spare boathouse key kept?"
    code, modules, done = _fresh(tmp_path, "--home", str(served_home), "search", query, "--json")
    assert code == 0, done.stderr[-3000:]
    hits = json.loads(done.stdout)["hits"]
    assert hits and "barometer" in hits[0]["snippet"]
    assert "stratamem.core.commands.search" in modules
    assert _unneeded(modules) == []


def test_help_lists_every_command_and_imports_none(tmp_path: Path) -> None:
    code, modules, done = _fresh(tmp_path, "--help")
    assert code == 0, done.stderr[-3000:]
    registered = collect("register_commands")
    assert len(registered) >= 14  # the built-ins; installed adapters add theirs
    for name, help_text, _configure, _run in registered:
        assert f"    {name} " in done.stdout, name
        assert " ".join(help_text.split()[:3]) in " ".join(done.stdout.split()), name
    loaded = [m for m in modules if m.startswith("stratamem.core.commands.")]
    assert loaded == [], loaded
    assert _unneeded(modules) == []


@pytest.mark.parametrize("name", [c[0] for c in collect("register_commands")])
def test_every_command_is_configured_when_chosen(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: stratamem {name}")
    assert "--home" in out  # the global options reach every command, before or after its name


def test_a_chosen_command_gets_its_arguments_and_the_global_options_nested(tmp_path: Path) -> None:
    # ``memory`` has actions of its own: ``--home`` after the action name still parses
    root = tmp_path / "project"
    root.mkdir()
    home = tmp_path / "h"
    code = main(["memory", "--root", str(root), "files", "--home", str(home), "--create"])
    assert code == 0


def test_structlog_is_configured_when_first_imported() -> None:
    """Deferred, not dropped: a structlog logger made after ``main`` started writes on stderr,
    never among the results on stdout."""
    script = (
        "import sys\n"
        "from stratamem.core import cli\n"
        "cli._console_logging()\n"
        "assert 'structlog' not in sys.modules\n"
        "import importlib.util\n"
        "assert importlib.util.find_spec('structlog') is not None  # a probe: imports nothing\n"
        "import structlog\n"
        "structlog.get_logger().warning('plugin-warning')\n"
        "structlog.get_logger().info('plugin-info')\n"
        "assert not any(type(f).__name__ == '_AfterImport' for f in sys.meta_path)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == ""
    assert "plugin-warning" in done.stderr
    assert "plugin-info" not in done.stderr  # $STRATAMEM_LOG_LEVEL defaults to WARNING


_SCRIPT = """
import atexit, sys
marker = sys.argv[1]
atexit.register(lambda: open(marker, "w").write("exit handlers ran"))

class Finalized:  # its __del__ runs in the interpreter's finalization, which a served command skips
    def __del__(self):
        sys.stderr.write("finalized\\n")

kept = Finalized()
sys.argv = ["stratamem", *sys.argv[2:]]
from stratamem.core.cli import script
script()
"""


def test_the_console_script_exits_without_finalization_after_a_served_search(
    served_home: Path, tmp_path: Path
) -> None:
    def script(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(tmp_path / "marker"), *argv],
            capture_output=True,
            text=True,
            timeout=300,
        )

    query = "Where is the spare boathouse key kept?"
    done = script("--home", str(served_home), "search", query, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "barometer" in json.loads(done.stdout)["hits"][0]["snippet"]
    assert (tmp_path / "marker").read_text() == "exit handlers ran"
    assert "finalized" not in done.stderr  # ~22 ms of module teardown skipped
    # the same exit code as before for a served command that fails, and a usual exit otherwise
    done = script("--home", str(served_home), "search", query, "--limit", "99")
    assert done.returncode == 2 and "--limit must be 1-50" in done.stderr
    done = script("--home", str(tmp_path / "nohome"), "search", query)
    assert done.returncode == 2 and "home_not_found" in done.stderr
    assert "finalized" in done.stderr  # (it returned before the command ran)
    done = script("--home", str(served_home), "--offline", "search", query, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "finalized" in done.stderr  # --offline: the engine's process exits as it always did
