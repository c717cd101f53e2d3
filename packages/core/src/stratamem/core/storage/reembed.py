"""Re-embed every vector of a home with the configured embedder (after a model or dimension change).

Runs with the home's lock held and rewrites each LanceDB table with the new schema; LanceDB keeps the
previous version until cleanup, so an interrupted run can be restored.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from stratamem.core.storage.schemas import TABLES
from stratamem.core.storage.vector_text import embed_text

os.environ.setdefault("LANCEDB_LOG", "error")

BATCH = 64


def reembed_store(
    lance_dir: Path,
    embed: Callable[[list[str]], np.ndarray],
    dim: int,
    model: str,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, int]:
    """Rewrite each table with vectors from ``embed``; returns re-embedded vectors per table."""
    import lancedb
    from lancedb.index import FTS

    db = lancedb.connect(str(lance_dir))
    existing = set(db.list_tables().tables)
    done: dict[str, int] = {}
    for name, (factory, vec_cols) in TABLES.items():
        if name not in existing:
            continue
        tbl = db.open_table(name)
        rows: list[dict[str, Any]] = tbl.to_arrow().to_pylist()
        jobs: list[tuple[int, str, str]] = []
        for i, row in enumerate(rows):
            for col in vec_cols:
                had_vector = row.get(col) is not None
                text = embed_text(name, col, row)
                row[col] = None
                # keep "no action vector" rows (lightweight mode) without one
                if text and (had_vector or col != "vec_action"):
                    jobs.append((i, col, text))
        for start in range(0, len(jobs), BATCH):
            chunk = jobs[start : start + BATCH]
            vecs = embed([t for _, _, t in chunk])
            for (i, col, _), vec in zip(chunk, vecs, strict=True):
                rows[i][col] = np.asarray(vec, dtype=np.float32).tolist()
            if progress:
                progress(name, min(start + BATCH, len(jobs)), len(jobs))
        schema = factory(dim, model)
        import pyarrow as pa

        data = pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in rows], schema)
        new = db.create_table(
            name, data=data, schema=schema, mode="overwrite", on_bad_vectors="null"
        )
        if rows:
            new.create_index("search_text", config=FTS(), replace=True)
        done[name] = len(jobs)
    return done
