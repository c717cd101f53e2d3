"""The adapter is a thin client: no module of ``stratamem.hermes`` imports anything from
``stratamem.core`` but the public plugin marker (``from stratamem.core import hookimpl``).

Two checks, because the engine used to come in through imports inside functions: every ``import``
statement of every module, wherever it sits, is read from the source; and every module is imported
in a fresh interpreter, which must not load any ``stratamem.core`` module but the marker's.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import stratamem.hermes as adapter

#: ``stratamem.core`` itself (lazy) and the module its ``hookimpl`` marker lives in
ALLOWED_MODULES = {"stratamem.core", "stratamem.core.hookspecs"}
SOURCES = sorted(Path(adapter.__path__[0]).rglob("*.py"))
MODULES = sorted(m.name for m in pkgutil.walk_packages(adapter.__path__, "stratamem.hermes."))


def _core_imports(path: Path) -> list[str]:
    """``file:line name`` for each import of ``stratamem.core`` other than its ``hookimpl``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.split(".")[:2] == ["stratamem", "core"]]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stratamem.core"):
            marker = node.module == "stratamem.core" and [a.name for a in node.names] == [
                "hookimpl"
            ]
            names = [] if marker else [str(node.module)]
        else:
            continue
        found += [f"{path.name}:{node.lineno} {name}" for name in names]
    return found


def test_no_module_imports_core_internals_anywhere_in_its_source() -> None:
    assert len(SOURCES) > 3
    offending = [hit for path in SOURCES for hit in _core_imports(path)]
    assert offending == []


def test_importing_every_module_in_a_fresh_interpreter_loads_only_the_plugin_marker() -> None:
    assert len(MODULES) > 3
    script = (
        "import importlib, json, sys\n"
        "loaded = {}\n"
        f"for name in {MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "    for m in sorted(sys.modules):\n"
        "        if m.split('.')[:2] == ['stratamem', 'core']:\n"
        "            loaded.setdefault(m, name)\n"
        "print(json.dumps(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    extra = {m: by for m, by in loaded.items() if m not in ALLOWED_MODULES}
    assert extra == {}, (
        f"core modules loaded (module -> first adapter module importing it): {extra}"
    )
