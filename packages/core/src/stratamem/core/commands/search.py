"""``stratamem search QUERY``: tool-driven (default) or turn-start recall over the home."""

from __future__ import annotations

import argparse
import sys

from stratamem.contract.dtos import RetrievalQuery, RetrievalResult, TopK
from stratamem.contract.protocol import MemoryCore
from stratamem.core.commands.common import CLI_AGENT, namespace_of, print_json, run_async

NAME = "search"
HELP = "search the memory (tool_driven by default); --json prints hits, context and latencies"
MAX_LIMIT = 50


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="free-text query")
    parser.add_argument("--limit", type=int, default=10, help="total hits, 1-50 (default 10)")
    parser.add_argument("--reason", choices=("tool_driven", "turn_start"), default="tool_driven")
    parser.add_argument("--json", action="store_true", help="print JSON only")


def as_json(result: RetrievalResult, limit: int) -> dict[str, object]:
    hits = sorted(result.hits, key=lambda h: h.score, reverse=True)[:limit]
    return {
        "hits": [
            {
                "tier": h.tier,
                "ref_kind": h.ref_kind,
                "ref_id": h.ref_id,
                "score": h.score,
                "snippet": h.snippet,
            }
            for h in hits
        ],
        "injected_context": result.injected_context,
        "tier_latency_ms": {
            "tier1": result.tier_latency_ms.tier1,
            "tier2": result.tier_latency_ms.tier2,
            "tier3": result.tier_latency_ms.tier3,
        },
    }


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_LIMIT:
        print(f"stratamem: error [invalid_argument] --limit must be 1-{MAX_LIMIT}", file=sys.stderr)
        return 2
    if not args.query.strip():
        print("stratamem: error [invalid_argument] the query is empty", file=sys.stderr)
        return 2

    async def body(core: MemoryCore) -> int:
        ns = namespace_of(args)
        query = RetrievalQuery(
            agent=CLI_AGENT,
            query=args.query,
            namespace=ns,
            reason=args.reason,
            top_k=TopK(tier1=args.limit, tier2=args.limit, tier3=args.limit),
        )
        result = await core.search(query)
        data = as_json(result, args.limit)
        if args.json:
            print_json(data)
            return 0
        hits = data["hits"]
        assert isinstance(hits, list)
        if not hits:
            print("no memories found", file=sys.stderr)
        for i, h in enumerate(hits, 1):
            snippet = " ".join(str(h["snippet"]).split())
            print(f"{i:2}. [tier {h['tier']} {h['ref_kind']} {h['ref_id']}] {h['score']:.3f}")
            print(f"    {snippet[:300]}")
        return 0

    return run_async(args, body)
