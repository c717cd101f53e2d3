"""Typed, fully-defaulted reads of the config: every value comes from the loaded config or, when a
caller passed a partial mapping, from the one defaults table (``config/defaults.py``) — never from a
literal at the call site. A key the table does not know is a programming error (``UnknownSetting``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from stratamem.core.config.defaults import DEFAULTS


class UnknownSetting(LookupError):
    """Code read a config key that the defaults table does not define."""


def _table(path: str) -> Mapping[str, Any]:
    node: Any = DEFAULTS
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node or not isinstance(node[part], Mapping):
            raise UnknownSetting(f"no config section {path!r} in the defaults table")
        node = node[part]
    return node  # type: ignore[no-any-return]


class Section(Mapping[str, Any]):
    """One config section (``"storage"``, ``"embedding.cache"``): the given values over the table's.

    ``Section("storage", cfg["storage"]).get_int("ann_ef")`` reads ``storage.ann_ef``; reading a key the
    table lacks raises ``UnknownSetting`` (a typo fails in tests, not silently in production).
    """

    __slots__ = ("_defaults", "_values", "name")

    def __init__(self, name: str, values: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self._defaults = _table(name)
        self._values: Mapping[str, Any] = values if isinstance(values, Mapping) else {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._defaults:
            raise UnknownSetting(f"config key {self.name}.{key} is not in the defaults table")
        if key in self._values:
            return self._values[key]
        return self._defaults[key]

    def __contains__(self, key: object) -> bool:
        return key in self._defaults

    def __iter__(self) -> Iterator[str]:
        return iter(self._defaults)

    def __len__(self) -> int:
        return len(self._defaults)

    def get(self, key: str, default: Any = None) -> Any:
        """Like ``self[key]``: a table key always has a value; an unknown key raises."""
        return self[key]

    def get_int(self, key: str) -> int:
        return int(self[key])

    def get_float(self, key: str) -> float:
        return float(self[key])

    def get_bool(self, key: str) -> bool:
        return bool(self[key])

    def get_str(self, key: str) -> str:
        value = self[key]
        return "" if value is None else str(value)

    def section(self, key: str) -> Section:
        """A nested section (``embedding`` -> ``cache``)."""
        sub = self._values.get(key)
        return Section(f"{self.name}.{key}", sub if isinstance(sub, Mapping) else None)


def section(config: Mapping[str, Any] | None, name: str) -> Section:
    """``config[name]`` of a whole config mapping, as a ``Section``."""
    node: Any = config or {}
    for part in name.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return Section(name, node if isinstance(node, Mapping) else None)


def lookup(config: Mapping[str, Any] | None, section_name: str, key: str) -> Any:
    """One value of a whole config mapping: ``config[section][key]`` or the table's default."""
    return section(config, section_name)[key]
