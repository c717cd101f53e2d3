"""Defer the body of LanceDB's unused REST namespace client until something asks for one of its names.

``import lancedb`` imports ``lance_namespace``, which imports the generated OpenAPI client
``lance_namespace_urllib3_client`` for its request models. The client package's ``__init__``
also imports its nine REST API modules, whose ``validate_call`` decorators build pydantic
schemas for every endpoint: ~1.6–2.2 s of a cold engine import's ~3 s on this project's machine
(``python -X importtime``, lance-namespace 0.13), paid by every process that opens a home — a
service's start, a host's first recall without a service, a takeover when a home's owner leaves.
Stratamem only opens local tables and never uses that client.

The finder below gives that one package a loader that runs its body on the first attribute
read instead of at import. Its submodules (the models LanceDB needs) import as before, because
the package's ``__path__`` is set without the body; a caller that does use the client
(``from lance_namespace_urllib3_client import ApiClient``) gets the body run then, once, under a
lock. Nothing else is changed. Installed by ``stratamem.core``'s ``__init__`` so that it precedes
any import of LanceDB in the engine, whichever module comes first.
"""

from __future__ import annotations

import _thread
import importlib.machinery
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (``importlib.abc`` pulls in importlib.resources, pathlib, tempfile: ~10 ms)
    from collections.abc import Sequence
    from importlib.abc import Loader
    from types import ModuleType

#: the package whose body is deferred
DEFERRED = "lance_namespace_urllib3_client"


class _BodyOnFirstUse:
    """Wraps the package's real loader: creates the module, runs its body on first use."""

    def __init__(self, real: Loader) -> None:
        self._real = real
        self._lock = _thread.allocate_lock()

    def __getattr__(self, name: str) -> Any:  # resource readers, get_code, is_package, …
        return getattr(self._real, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        real, lock = self._real, self._lock

        def __getattr__(name: str) -> Any:
            with lock:
                if module.__dict__.get("__getattr__") is __getattr__:
                    del module.__dict__["__getattr__"]
                    real.exec_module(module)
            if name in module.__dict__:
                return module.__dict__[name]
            getter = module.__dict__.get("__getattr__")  # the body's own, if it defines one
            if getter is not None:
                return getter(name)
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

        module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _Finder:
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != DEFERRED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _BodyOnFirstUse(spec.loader)  # type: ignore[assignment]
        return spec


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once); a package already imported is left alone."""
    if DEFERRED in sys.modules or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())
