"""tox's inline plugin (tox loads ``toxfile.py`` from next to ``tox.ini``): a matrix that is real.

* Every installed CPython 3.11-3.13 runs, pyenv's versions included (see ``scripts/pythons.py``).
* Under ``CI=true`` a Python that is missing fails the run instead of being skipped, so a green CI
  never hides envs that tested nothing; outside CI a missing one is skipped (``tox.ini``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from tox.plugin import impl

ROOT = Path(__file__).resolve().parent


def _pythons_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_stratamem_pythons", ROOT / "scripts" / "pythons.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@impl
def tox_add_core_config(core_conf: Any, state: Any) -> None:
    link_dir = ROOT / ".tox" / ".pythons"
    _pythons_module().link_pythons(link_dir)
    path = os.environ.get("PATH", "")
    if str(link_dir) not in path.split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([str(link_dir), path]) if path else str(link_dir)
    options = state.conf.options
    if in_ci() and getattr(options, "skip_missing_interpreters", "config") == "config":
        options.skip_missing_interpreters = "false"
