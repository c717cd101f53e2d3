"""``stratamem search QUERY``: tool-driven (default) or turn-start recall over the home.

Without ``--namespace`` it searches every namespace that holds memories (a Hermes home keeps them in
``hermes/default``, not the CLI's own ``cli/default``) and names the namespace of each hit.
"""

from __future__ import annotations

import argparse
import sys

from stratamem.contract.dtos import Namespace, RetrievalHit, RetrievalQuery, TopK
from stratamem.contract.protocol import MemoryCore
from stratamem.core.commands.common import (
    CLI_AGENT,
    label,
    namespace_given,
    namespace_of,
    namespaces_with_memories,
    print_json,
    reads_home,
    run_async,
    through_service,
)

MAX_LIMIT = 50


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="free-text query")
    parser.add_argument("--limit", type=int, default=10, help="total hits, 1-50 (default 10)")
    parser.add_argument("--reason", choices=("tool_driven", "turn_start"), default="tool_driven")


def hit_json(ns: Namespace, h: RetrievalHit) -> dict[str, object]:
    return {
        "namespace": label(ns),
        "tier": h.tier,
        "ref_kind": h.ref_kind,
        "ref_id": h.ref_id,
        "score": h.score,
        "snippet": h.snippet,
    }


async def search_all(
    core: MemoryCore, namespaces: list[Namespace], args: argparse.Namespace
) -> dict[str, object]:
    """The best ``--limit`` hits over ``namespaces``. The agent-facing context block is left out:
    it names the agent's follow-up tools (``memos_get``...), which a CLI user does not have."""
    hits: list[tuple[Namespace, RetrievalHit]] = []
    latency = {"tier1": 0.0, "tier2": 0.0, "tier3": 0.0}
    for ns in namespaces:
        result = await core.search(
            RetrievalQuery(
                agent=CLI_AGENT,
                query=args.query,
                namespace=ns,
                reason=args.reason,
                top_k=TopK(tier1=args.limit, tier2=args.limit, tier3=args.limit),
            )
        )
        hits += [(ns, h) for h in result.hits]
        for tier in latency:
            latency[tier] += float(getattr(result.tier_latency_ms, tier))
    hits.sort(key=lambda nh: nh[1].score, reverse=True)
    return {
        "namespaces": [label(ns) for ns in namespaces],
        "hits": [hit_json(ns, h) for ns, h in hits[: args.limit]],
        "tier_latency_ms": latency,
    }


@reads_home
@through_service
def run(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_LIMIT:
        print(f"stratamem: error [invalid_argument] --limit must be 1-{MAX_LIMIT}", file=sys.stderr)
        return 2
    if not args.query.strip():
        print("stratamem: error [invalid_argument] the query is empty", file=sys.stderr)
        return 2

    async def body(core: MemoryCore) -> int:
        if namespace_given(args):
            namespaces = [namespace_of(args)]
        else:
            namespaces = await namespaces_with_memories(core) or [namespace_of(args)]
        data = await search_all(core, namespaces, args)
        if args.json:
            print_json(data)
            return 0
        hits = data["hits"]
        assert isinstance(hits, list)
        where = ", ".join(label(ns) for ns in namespaces)
        if not hits:
            print(f"no memories found (searched {where})", file=sys.stderr)
        for i, h in enumerate(hits, 1):
            snippet = " ".join(str(h["snippet"]).split())
            print(
                f"{i:2}. [{h['namespace']} · tier {h['tier']} {h['ref_kind']} {h['ref_id']}] "
                f"{h['score']:.3f}"
            )
            print(f"    {snippet[:300]}")
        return 0

    return run_async(args, body)
