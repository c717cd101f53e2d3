"""A third-party plugin, installed as a distribution with a ``stratamem`` entry point, is found and used.

The package is laid out exactly as an installer leaves it (module + ``*.dist-info`` with
``entry_points.txt``) in a directory put on ``PYTHONPATH`` of a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PLUGIN = textwrap.dedent(
    '''
    """tiny_stratamem_plugin: a bag-of-letters embedder and a hello command."""
    import os
    from pathlib import Path

    import numpy as np
    from stratamem.core import hookimpl


    class LetterEmbedder:
        name = "letters"
        model = "letters-26"
        dimension = 26

        def _one(self, text):
            v = np.zeros(26, dtype=np.float32)
            for ch in text.lower():
                if "a" <= ch <= "z":
                    v[ord(ch) - 97] += 1
            n = np.linalg.norm(v)
            return v / n if n else v

        def embed_documents(self, texts):
            marker = os.environ.get("TINY_MARKER")
            if marker:
                with open(marker, "a") as f:
                    f.write(f"{len(texts)}\\n")
            return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, 26), np.float32)

        def embed_query(self, text):
            return self._one(text)


    @hookimpl
    def register_embedders(register):
        register("letters", lambda config: LetterEmbedder())


    @hookimpl
    def register_commands(register):
        def configure(parser):
            parser.add_argument("name")

        def run(args):
            print(f"hello {args.name} from a plugin")
            return 0

        register("tiny-hello", "say hello (third-party plugin)", configure, run)
    '''
)


def _install(site: Path) -> None:
    site.mkdir()
    (site / "tiny_stratamem_plugin.py").write_text(PLUGIN)
    info = site / "tiny_stratamem_plugin-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tiny-stratamem-plugin\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text("[stratamem]\ntiny = tiny_stratamem_plugin\n")
    (info / "RECORD").write_text("")


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stratamem.core.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_an_installed_plugin_adds_a_command_and_an_embedder_the_core_uses(tmp_path: Path) -> None:
    site, home, marker = tmp_path / "site", tmp_path / "home", tmp_path / "calls.txt"
    _install(site)
    home.mkdir()
    (home / "config.yaml").write_text("embedding:\n  provider: letters\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "STRATAMEM_HOME": str(home),
        "TINY_MARKER": str(marker),
    }
    hello = _run(["tiny-hello", "world"], env)
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout.strip() == "hello world from a plugin"

    turns = tmp_path / "t.jsonl"
    turns.write_text(
        json.dumps({"session": "s", "user": "zebra zoo", "assistant": "ok", "ts": 1}) + "\n"
    )
    assert _run(["ingest", str(turns), "--no-progress"], env).returncode == 0
    assert marker.exists() and marker.read_text().strip()  # the plugin embedded the turn
    health = _run(["health", "--json"], env)
    assert json.loads(health.stdout)["embedder"]["dimension"] == 26


def test_without_the_plugin_the_unknown_provider_is_a_typed_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("embedding:\n  provider: letters\n")
    done = _run(["health"], {**os.environ, "STRATAMEM_HOME": str(home)})
    assert done.returncode != 0
    assert "letters" in done.stderr and "not registered" in done.stderr


OBSERVER_PLUGIN = textwrap.dedent(
    '''
    """watch_stratamem_plugin: writes every core event it observes, and the core start, to files."""
    import json
    import os

    # the pre-0.2 import path of the marker: older plugins keep working
    from stratamem.core.hookspecs import hookimpl


    def _append(var, line):
        with open(os.environ[var], "a") as f:
            f.write(line + "\\n")


    @hookimpl
    def register_event_observers(register):
        register("watch", lambda e: _append("WATCH_EVENTS", json.dumps([e.type, e.payload])))


    @hookimpl
    def core_started(core):
        _append("WATCH_STARTED", str(core.home))
    '''
)


def test_an_installed_plugin_observes_events_and_hears_the_core_start(tmp_path: Path) -> None:
    site, home = tmp_path / "site", tmp_path / "home"
    site.mkdir()
    (site / "watch_stratamem_plugin.py").write_text(OBSERVER_PLUGIN)
    info = site / "watch_stratamem_plugin-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: watch-stratamem-plugin\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text("[stratamem]\nwatch = watch_stratamem_plugin\n")
    (info / "RECORD").write_text("")
    home.mkdir()
    (home / "config.yaml").write_text("embedding:\n  provider: none\n")
    events, started = tmp_path / "events.jsonl", tmp_path / "started.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "STRATAMEM_HOME": str(home),
        "WATCH_EVENTS": str(events),
        "WATCH_STARTED": str(started),
    }
    turns = tmp_path / "t.jsonl"
    turns.write_text(
        json.dumps({"session": "s", "user": "the ferry leaves at 6", "assistant": "ok", "ts": 1})
        + "\n"
    )
    done = _run(["ingest", str(turns), "--no-progress"], env)
    assert done.returncode == 0, done.stderr
    assert started.exists() and str(home) in started.read_text()
    seen = [json.loads(line) for line in events.read_text().splitlines()]
    assert "trace.created" in {t for t, _ in seen}
    assert "session.opened" in {t for t, _ in seen}


def test_the_public_marker_is_light_and_the_same_as_the_old_path() -> None:
    """``from stratamem.core import hookimpl`` loads no engine; the old ``hookspecs`` path is the same marker."""
    probe = textwrap.dedent(
        """
        import sys
        from stratamem.core import hookimpl
        heavy = sorted(m for m in ("lancedb", "pyarrow", "numpy", "grpc", "stratamem.core.local",
                                   "stratamem.core.engine") if m in sys.modules)
        from stratamem.core.hookspecs import hookimpl as old
        print(heavy, hookimpl is old, hookimpl.project_name)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True", "stratamem"]
