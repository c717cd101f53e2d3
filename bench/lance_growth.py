"""Which LanceDB operation grows native memory: one real table with the traces schema, one row
appended per step (merge_insert on ``id``, as the journal writer does) and optional reads, with
the core's allocator settings and cache bounds; RSS, smaps regions and malloc sampled every
``--every`` steps. Each flag isolates one part of the soak's pattern (bench/soak.py, issue 16).

    uv run python -m bench.lance_growth --steps 4000 --search vec,fts --optimize-every 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench import native
from bench.machine import rss_mb

DIM = 384


def _row(i: int, rng: np.random.Generator) -> dict[str, Any]:
    v = rng.standard_normal(DIM).astype(np.float32)
    v /= np.linalg.norm(v)
    text = f"turn {i} user said something about topic {i % 97} and the agent answered {i % 13}"
    return {
        "id": uuid.uuid4().hex,
        "episode_id": f"e{i // 25}",
        "session_id": f"s{i // 100}",
        "ts": i,
        "turn_id": i,
        "user_text": text,
        "agent_text": text,
        "summary": text[:40],
        "search_text": text,
        "owner_agent_kind": "bench",
        "owner_profile_id": "default",
        "share_scope": "private",
        "vec_summary": v.tolist(),
        "vec_action": v.tolist(),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    from stratamem.core.storage import allocator
    from stratamem.core.storage.lance import _conform
    from stratamem.core.storage.schemas import traces_schema

    if not args.no_allocator:
        allocator.use_arrow_pool("system")
        allocator.limit_malloc_arenas(2)
        allocator.set_mmap_threshold(1 << 20)
    mb = 1 << 20
    session = lancedb.Session(
        index_cache_size_bytes=args.index_cache_mb * mb,
        metadata_cache_size_bytes=args.metadata_cache_mb * mb,
    )
    rng = np.random.default_rng(7)
    searches = {s for s in args.search.split(",") if s}
    curve: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lance-growth-") as tmp:
        db = await lancedb.connect_async(str(Path(tmp)), session=session)
        schema = traces_schema(DIM, "probe")
        tbl = await db.create_table("traces", schema=schema)
        t0 = time.perf_counter()
        for i in range(1, args.steps + 1):
            data = pa.Table.from_pylist([_conform(_row(i, rng), schema)], schema=schema)
            if args.write == "merge":
                await (
                    tbl.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(data, on_bad_vectors="null")
                )
            elif args.write == "add":
                await tbl.add(data)
            if i == 1 and "fts" in searches:
                await tbl.create_index("search_text", config=FTS(), replace=True)
            if args.reopen:
                tbl.close()
                tbl = await db.open_table("traces")
            if i % args.search_every == 0:
                where = "owner_agent_kind = 'bench' AND owner_profile_id = 'default'"
                if "vec" in searches:
                    q = rng.standard_normal(DIM).astype(np.float32)
                    await (
                        tbl.query()
                        .nearest_to(q)
                        .column("vec_summary")
                        .distance_type("cosine")
                        .where(where)
                        .limit(20)
                        .bypass_vector_index()
                        .to_arrow()
                    )
                if "fts" in searches:
                    await (
                        tbl.query().nearest_to_text("topic agent").where(where).limit(20).to_arrow()
                    )
                if "count" in searches:
                    await tbl.count_rows(where)
            if args.optimize_every and i % args.optimize_every == 0:
                await tbl.optimize(cleanup_older_than=timedelta(seconds=args.cleanup_s))
            if args.renew_every and i % args.renew_every == 0:
                tbl.close()
                db.close()
                del tbl, db
                session = lancedb.Session(
                    index_cache_size_bytes=args.index_cache_mb * mb,
                    metadata_cache_size_bytes=args.metadata_cache_mb * mb,
                )
                db = await lancedb.connect_async(str(Path(tmp)), session=session)
                tbl = await db.open_table("traces")
            if args.trim and i % 200 == 0:
                allocator.trim()
            if i % args.every == 0:
                curve.append(
                    {
                        "step": i,
                        "s": round(time.perf_counter() - t0, 1),
                        "rss": rss_mb(),
                        "cache": round(session.size_bytes / mb, 2),
                        "cache_items": session.approx_num_items,
                        "version": await tbl.version(),
                        **{f"smaps_{k}": v for k, v in native.smaps_regions().items()},
                        **{f"malloc_{k}": v for k, v in native.malloc_mb().items()},
                        "py_blocks": native.python_blocks(),
                    }
                )
                print(json.dumps(curve[-1]), flush=True)
        tbl.close()
        db.close()
    return {"args": vars(args), "curve": curve}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.lance_growth", description=__doc__)
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--every", type=int, default=500)
    p.add_argument("--write", choices=("merge", "add", "none"), default="merge")
    p.add_argument("--search", default="", help="comma list of vec, fts, count")
    p.add_argument("--search-every", type=int, default=1)
    p.add_argument("--optimize-every", type=int, default=0)
    p.add_argument("--cleanup-s", type=int, default=60)
    p.add_argument("--reopen", action="store_true", help="a new table handle every step")
    p.add_argument(
        "--renew-every", type=int, default=0, help="a new session and connection every N steps"
    )
    p.add_argument("--trim", action="store_true", help="malloc_trim every 200 steps")
    p.add_argument("--no-allocator", action="store_true", help="leave glibc/Arrow defaults")
    p.add_argument("--index-cache-mb", type=int, default=64)
    p.add_argument("--metadata-cache-mb", type=int, default=32)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    res = asyncio.run(run(args))
    if args.out:
        args.out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
