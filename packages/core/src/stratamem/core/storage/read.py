"""Rows of a LanceDB query as dicts, vectors as float32 numpy arrays (the query path's reads).

``to_list()`` turns every 384-d vector into a list of 384 Python floats, which retrieval turns
straight back into a float32 array (``retrieval.candidates.unit``): on the LanceDB path that
round trip was the largest single cost of a query. Here a fixed-size float list column comes out as
one numpy view per row over Arrow's buffer (read-only, the same float32 values); every other column
is exactly what ``to_list()`` gives.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


async def rows_of(query: Any) -> list[dict[str, Any]]:
    """Run a LanceDB (or ``ScopedQuery``) builder; its rows as :func:`arrow_rows` gives them."""
    return arrow_rows(await query.to_arrow())


def arrow_rows(table: pa.Table) -> list[dict[str, Any]]:
    """``table.to_pylist()``, but fixed-size lists of float32 become float32 numpy rows (None for
    a null); a projected table (``select``) converts only the columns it holds."""
    names = table.column_names
    if table.num_rows == 0 or not names:
        return [{} for _ in range(table.num_rows)]
    cols = [_column(table.column(i)) for i in range(table.num_columns)]
    return [dict(zip(names, vals, strict=True)) for vals in zip(*cols, strict=True)]


def _column(col: pa.ChunkedArray) -> list[Any]:
    kind = col.type
    if not (pa.types.is_fixed_size_list(kind) and pa.types.is_float32(kind.value_type)):
        plain: list[Any] = col.to_pylist()
        return plain
    size = kind.list_size
    out: list[Any] = []
    for chunk in col.chunks:
        n = len(chunk)
        if n == 0:
            continue
        start = chunk.offset * size  # ``values`` ignores a sliced chunk's offset
        flat = chunk.values.slice(start, n * size).to_numpy(zero_copy_only=False)
        mat = flat.reshape(n, size)
        if chunk.null_count:
            nulls = chunk.is_null().to_pylist()
            out.extend(None if null else mat[i] for i, null in enumerate(nulls))
        else:
            out.extend(mat)
    return out
