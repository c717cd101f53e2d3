"""Shared by the adapters' tests: an adapter is a thin client, so none of its modules imports
anything from ``stratamem.core`` but the public plugin marker (``from stratamem.core import hookimpl``).

Two checks, because the engine used to come in through imports inside functions: every ``import``
statement of every module, wherever it sits, is read from the source; and every module is imported
in a fresh interpreter, which must not load any ``stratamem.core`` module but the marker's.
(On ``sys.path`` through ``[tool.pytest.ini_options] pythonpath``; never shipped in a wheel.)
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

#: ``stratamem.core`` itself (lazy), the module its ``hookimpl`` marker lives in, and the import
#: finder its ``__init__`` installs (``deferred_imports``: no engine code, ``importlib.machinery`` only)
ALLOWED_MODULES = {"stratamem.core", "stratamem.core.hookspecs", "stratamem.core.deferred_imports"}


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


def core_imports_in_source(adapter: ModuleType) -> list[str]:
    """Every import of a core internal written anywhere in the adapter package's source."""
    sources = sorted(Path(adapter.__path__[0]).rglob("*.py"))
    assert len(sources) > 3, sources
    return [hit for path in sources for hit in _core_imports(path)]


def core_modules_loaded_on_import(adapter: ModuleType) -> dict[str, str]:
    """Core modules (other than the marker's) that importing every adapter module loads, each
    with the first adapter module that brought it in; imported in a fresh interpreter."""
    modules = sorted(
        m.name for m in pkgutil.walk_packages(adapter.__path__, f"{adapter.__name__}.")
    )
    assert len(modules) > 3, modules
    script = (
        "import importlib, json, sys\n"
        "loaded = {}\n"
        f"for name in {modules!r}:\n"
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
    return {m: by for m, by in loaded.items() if m not in ALLOWED_MODULES}
