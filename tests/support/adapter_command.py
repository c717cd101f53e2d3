"""Shared by the adapters' tests: an adapter's ``stratamem`` command is named by its plugin module
with its help, and its command module is imported only when that command is chosen (every other
``stratamem`` process, a served ``search`` on each turn, skips it: bench/results/startup-session19.md).
(On ``sys.path`` through ``[tool.pytest.ini_options] pythonpath``; never shipped in a wheel.)
"""

from __future__ import annotations

import json
import subprocess
import sys

#: runs ``stratamem ARGV`` in this interpreter, then prints its exit code and the modules it loaded
_CHILD = """
import json, sys
from stratamem.core.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("\\nMODULES " + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def run_fresh(*argv: str) -> tuple[int, str, set[str]]:
    """(exit code, stdout before the module list, modules loaded) of ``stratamem ARGV`` in a fresh
    interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv], capture_output=True, text=True, timeout=300
    )
    out, sep, tail = done.stdout.rpartition("\nMODULES ")
    assert sep, done.stderr[-3000:]
    data = json.loads(tail)
    return int(data["code"] or 0), out, set(data["modules"])


def check_named_then_imported_when_chosen(command: str, module: str, help_start: str) -> None:
    """``stratamem --help`` lists ``command`` with its help and leaves ``module`` unimported;
    ``stratamem COMMAND --help`` imports it and shows its own arguments and the global options."""
    code, out, modules = run_fresh("--help")
    assert code == 0
    assert f"    {command} " in out and help_start in " ".join(out.split())
    assert module not in modules
    code, out, modules = run_fresh(command, "--help")
    assert code == 0
    assert out.startswith(f"usage: stratamem {command}") and "ACTION" in out
    assert module in modules
