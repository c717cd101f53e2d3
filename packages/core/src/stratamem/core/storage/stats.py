"""Storage health per LanceDB table for ``stratamem doctor`` and the server's stats: rows,
versions, fragments, unindexed rows per index, disk bytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lancedb


async def table_stats(tables: Mapping[str, lancedb.AsyncTable]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, tbl in tables.items():
        info: dict[str, Any] = {"rows": await tbl.count_rows(), "version": await tbl.version()}
        try:
            st: Any = await tbl.stats()
            info["bytes"] = int(_field(st, "total_bytes"))
            info["fragments"] = int(_field(_field(st, "fragment_stats"), "num_fragments"))
        except Exception:  # stats are advisory
            pass
        unindexed = {}
        for idx in await tbl.list_indices():
            s = await tbl.index_stats(idx.name)
            if s is not None:
                unindexed[idx.name] = int(s.num_unindexed_rows)
        info["unindexed_rows"] = unindexed
        out[name] = info
    return out


def _field(obj: Any, key: str) -> Any:
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)
