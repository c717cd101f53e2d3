"""Retrieval against a real LanceDB in tmp_path with the real default embedder (no mocks)."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import FTS

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK, TurnResult
from stratamem.core.capture import build_trace_drafts
from stratamem.core.embedding.loader import load_embedder
from stratamem.core.retrieval import RetrievalContext, retrieve
from stratamem.core.retrieval.engine import _Run
from stratamem.core.storage.schemas import (
    policies_schema,
    skills_schema,
    traces_schema,
    world_models_schema,
)

NS = Namespace("hermes", "default")
OTHER = Namespace("openclaw", "default")
BASE_TS = 1_760_000_000_000

FACTS: list[tuple[str, str, str]] = [
    (
        "sister",
        "My sister Alice moved to Lisbon and works as a marine biologist.",
        "Noted: Alice is a marine biologist in Lisbon.",
    ),
    ("dog", "We adopted a beagle puppy called Biscuit last spring.", "Biscuit the beagle, lovely!"),
    (
        "report",
        "The quarterly financial report has to be submitted by March 14th.",
        "I'll keep the March 14 deadline in mind.",
    ),
    (
        "staging",
        "Our staging Postgres instance listens on port 5433, not the default.",
        "Got it: staging Postgres uses port 5433.",
    ),
    (
        "allergy",
        "I'm allergic to peanuts, so never suggest recipes with them.",
        "Understood, no peanuts in any recipe.",
    ),
    ("car", "I drive a dark green 2015 Subaru Outback.", "A green Subaru Outback, noted."),
    (
        "git",
        "How do I squash the last three commits into one?",
        "Run git rebase -i HEAD~3 and mark the last two as squash.",
    ),
    ("capital", "What's the capital of Australia?", "Canberra is the capital of Australia."),
    (
        "gym",
        "I go climbing at the bouldering gym every Tuesday evening.",
        "Tuesday evening bouldering, got it.",
    ),
    (
        "coffee",
        "I only drink oat milk flat whites in the morning.",
        "Oat milk flat white every morning.",
    ),
    (
        "yaml",
        "The docker build fails with ModuleNotFoundError: No module named 'yaml'.",
        "Add pyyaml to requirements.txt and rebuild the image.",
    ),
    (
        "wedding",
        "My brother's wedding is in Porto on the 3rd of August.",
        "Porto wedding on August 3rd, noted.",
    ),
]


@functools.cache
def embedder() -> Any:
    return load_embedder({"provider": "local"})


_VECTORS: dict[str, list[float]] = {}


def embed_docs(texts: list[str]) -> list[list[float]]:
    """Batch-embed with the real model, caching by text (tests reuse the same facts)."""
    missing = [t for t in dict.fromkeys(texts) if t not in _VECTORS]
    if missing:
        for text, vec in zip(missing, embedder().embed_documents(missing), strict=True):
            _VECTORS[text] = vec.tolist()
    return [_VECTORS[t] for t in texts]


def trace_rows(
    facts: list[tuple[str, str, str]],
    ns: Namespace = NS,
    *,
    session: str = "se_old",
    ts0: int = BASE_TS,
    embed: bool = True,
    prefix: str = "",
) -> list[dict[str, Any]]:
    rows, texts = [], []
    for i, (key, user, agent) in enumerate(facts):
        (d,) = build_trace_drafts(
            user,
            TurnResult(
                agent=ns.agent_kind,
                session_id=session,
                agent_text=agent,
                ts=ts0 + i * 60_000,
                namespace=ns,
            ),
            lightweight=True,
            episode_id=f"ep_{prefix}{key}",
        )
        row = d.row()
        row.update(id=f"tr_{prefix}{key}", journal_seq=i, vec_summary=None, vec_action=None)
        rows.append(row)
        texts.append(d.summary_text_to_embed)
    if embed:
        for row, vec in zip(rows, embed_docs(texts), strict=True):
            row["vec_summary"] = vec
    return rows


async def open_tables(
    tmp_path: Path, traces: list[dict[str, Any]], *, fts: bool = True
) -> dict[str, Any]:
    db = await lancedb.connect_async(str(tmp_path / "lance"))
    schema = traces_schema(embedder().dimension)
    tbl = await db.create_table("traces", schema=schema)
    if traces:
        await tbl.add(pa.Table.from_pylist(traces, schema=schema))
        if fts:
            await tbl.create_index("search_text", config=FTS(), replace=True)
    return {"traces": tbl}


async def ask(
    tables: dict[str, Any],
    text: str,
    *,
    ns: Namespace = NS,
    reason: str = "tool_driven",
    emb: Any = "default",
    pending: list[dict[str, Any]] | None = None,
    **kw: Any,
) -> Any:
    query_kw = {k: kw.pop(k) for k in ("context_hints", "session_id", "top_k") if k in kw}
    return await retrieve(
        RetrievalContext(
            query=RetrievalQuery(agent=ns.agent_kind, query=text, reason=reason, **query_kw),
            namespace=ns,
            tables=tables,
            pending_traces=pending or [],
            embedder=embedder() if emb == "default" else emb,
            lightweight=kw.pop("lightweight", True),
            deadline=kw.pop("deadline", time.monotonic() + 30),
            **kw,
        )
    )


def ids(result: Any) -> list[str]:
    return [h.ref_id for h in result.hits]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which city did my sibling relocate to?", "tr_sister"),
        ("What's the name of our pet?", "tr_dog"),
        ("When is the finance paperwork due?", "tr_report"),
        ("what port is the test database on", "tr_staging"),
        ("Is there any food I must avoid?", "tr_allergy"),
        ("What vehicle do I own?", "tr_car"),
        ("python package missing when building the container", "tr_yaml"),
    ],
)
async def test_a_paraphrased_question_finds_the_right_trace_in_the_top_three(
    tmp_path: Path, question: str, expected: str
) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    res = await ask(tables, question)
    assert expected in ids(res)[:3], [h.snippet[:50] for h in res.hits]
    assert not res.cut_off
    hit = next(h for h in res.hits if h.ref_id == expected)
    assert (
        hit.tier == 2
        and hit.ref_kind == "trace"
        and "[user]" in hit.snippet
        and "[assistant]" in hit.snippet
    )


QUESTION_WORD_NOISE = [
    (
        f"noise{i}",
        f"What is it? Why is it? How do you do what you do, and when is it where? ({i})",
        "What? When? Where? How?",
    )
    for i in range(8)
]


@pytest.mark.parametrize(
    ("emb", "fts"),
    [("default", True), (None, True), (None, False)],
    ids=["all-channels", "lexical-only", "pattern-only"],
)
async def test_short_question_words_do_not_dominate(tmp_path: Path, emb: Any, fts: bool) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS + QUESTION_WORD_NOISE), fts=fts)
    res = await ask(
        tables, "What is when the quarterly report is due, and how do I do it?", emb=emb
    )
    assert ids(res)[0] == "tr_report"
    noise = [i for i in ids(res) if i.startswith("tr_noise")]
    # rows made only of question words never outrank the answer and never fill the packet
    assert len(noise) <= 1


async def test_lexical_channels_work_without_an_embedder(tmp_path: Path) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    res = await ask(tables, "port of staging postgres", emb=None)
    assert ids(res)[0] == "tr_staging"
    assert "fts" in res.hits[0].score_details["channels"]


async def test_cjk_questions_match_through_the_pattern_channel(tmp_path: Path) -> None:
    cjk = [("bday", "我的生日是五月三日，记得提醒我。", "好的，五月三日。")]
    tables = await open_tables(tmp_path, trace_rows(FACTS + cjk))
    res = await ask(tables, "你还记得我的生日吗", emb=None)
    assert ids(res)[:1] == ["tr_bday"] and "pattern" in res.hits[0].score_details["channels"]


async def test_fts_uses_or_semantics_so_one_matching_word_is_enough(tmp_path: Path) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    res = await ask(tables, "bouldering xylophone quokka", emb=None)
    assert ids(res)[:1] == ["tr_gym"]


async def test_a_table_without_an_fts_index_still_answers(tmp_path: Path) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS), fts=False)
    res = await ask(tables, "Which city did my sibling relocate to?")
    assert "tr_sister" in ids(res)[:3]


async def test_the_vector_channel_searches_every_row_not_the_first_eighty(tmp_path: Path) -> None:
    filler = [
        (
            f"f{i}",
            f"Inventory item {i}: {i * 7} boxes of size {i % 5} screws in aisle {i % 11}.",
            "Logged.",
        )
        for i in range(140)
    ]
    target = [
        (
            "jazz",
            "Saxophone lessons with Mr. Okafor happen on Saturdays.",
            "Saturday sax lessons, noted.",
        )
    ]
    tables = await open_tables(tmp_path, trace_rows(filler + target), fts=False)
    res = await ask(tables, "When do I practise my woodwind instrument?")
    assert ids(res)[0] == "tr_jazz"


async def test_pending_rows_are_found_before_they_reach_lancedb(tmp_path: Path) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    fresh = trace_rows(
        [
            (
                "fresh",
                "My new office is on the 14th floor of the Meridian tower.",
                "Meridian tower, floor 14.",
            )
        ],
        ts0=BASE_TS + 10**8,
    )
    with_vec = await ask(tables, "Where is my workplace located now?", pending=fresh)
    assert "tr_fresh" in ids(with_vec)[:3]
    no_vec = trace_rows(
        [("fresh", "My new office is on the 14th floor of the Meridian tower.", "ok")], embed=False
    )
    lexical = await ask(tables, "which floor is the Meridian office", pending=no_vec)
    assert ids(lexical)[0] == "tr_fresh"


async def test_pending_rows_alone_are_searchable_with_no_table(tmp_path: Path) -> None:
    fresh = trace_rows(
        [("only", "The wifi password for the cabin is on the fridge.", "Fridge note, got it.")]
    )
    res = await ask({}, "where can I find the cabin wifi password", pending=fresh)
    assert ids(res) == ["tr_only"]


async def test_two_namespaces_with_look_alike_data_never_leak(tmp_path: Path) -> None:
    mine = trace_rows(FACTS, NS, prefix="a_")
    theirs = trace_rows(FACTS, OTHER, prefix="b_")
    tables = await open_tables(tmp_path, mine + theirs)
    pending_theirs = trace_rows(
        [("p", "My sister Alice moved to Lisbon recently.", "ok")], OTHER, prefix="b_"
    )
    for ns, own, foreign in ((NS, "tr_a_", "tr_b_"), (OTHER, "tr_b_", "tr_a_")):
        for question in (
            "Which city did my sibling relocate to?",
            "staging postgres port",
            "ModuleNotFoundError yaml",
        ):
            for emb in ("default", None):
                res = await ask(
                    tables, question, ns=ns, emb=emb, pending=pending_theirs if ns == NS else []
                )
                assert res.hits or (emb is None and "sibling" in question), question
                assert all(i.startswith(own) for i in ids(res)), (ns, question, ids(res))
                assert foreign not in res.injected_context


async def test_hub_shared_rows_are_visible_to_other_namespaces(tmp_path: Path) -> None:
    shared = trace_rows([("hub", "The team VPN endpoint is vpn.example.org.", "Noted.")], OTHER)
    shared[0]["share_scope"] = "hub"
    tables = await open_tables(tmp_path, trace_rows(FACTS) + shared)
    res = await ask(tables, "what is the team VPN endpoint", ns=NS)
    assert ids(res)[0] == "tr_hub"


class CallCounter:
    """Delegates to a real LanceDB table and counts every attribute used (no behaviour replaced)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.inner, name)


class CountingEmbedder:
    def __init__(self) -> None:
        self.calls = 0

    def embed_query(self, text: str) -> np.ndarray:
        self.calls += 1
        return embedder().embed_query(text)


async def test_a_deadline_already_past_returns_a_cut_off_without_touching_lancedb(
    tmp_path: Path,
) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    spy = CallCounter(tables["traces"])
    emb = CountingEmbedder()
    res = await ask(
        {"traces": spy}, "staging postgres port", emb=emb, deadline=time.monotonic() - 1
    )
    assert res.cut_off and spy.calls == [] and emb.calls == 0
    ok = await ask({"traces": spy}, "staging postgres port", emb=emb)
    assert not ok.cut_off and spy.calls and emb.calls == 1 and ids(ok)[0] == "tr_staging"


async def test_a_short_deadline_cuts_off_within_a_generous_bound(tmp_path: Path) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    t0 = time.monotonic()
    res = await ask(tables, "staging postgres port", deadline=t0 + 0.001)
    assert time.monotonic() - t0 < 10  # generous: speed is the bench's business
    assert res.cut_off


async def test_visible_context_is_not_recalled_again(tmp_path: Path) -> None:
    old = trace_rows(FACTS[:4], session="se_old")
    current = trace_rows(
        [("now", "Our staging Postgres moved to port 6543 today.", "Port 6543, noted.")],
        session="se_now",
        ts0=BASE_TS + 10**9,
    )
    tables = await open_tables(tmp_path, old + current)
    hints = {"visibleContextKnown": True, "visibleContextStartTs": BASE_TS + 10**9 - 1}
    res = await ask(
        tables,
        "staging postgres port",
        reason="turn_start",
        session_id="se_now",
        context_hints=hints,
    )
    assert "tr_now" not in ids(res) and "tr_staging" in ids(res)
    by_text = {
        "visibleContextKnown": True,
        "visibleContextUserTexts": ["Our staging Postgres moved to port 6543 today."],
    }
    res2 = await ask(
        tables,
        "staging postgres port",
        reason="turn_start",
        session_id="se_now",
        context_hints=by_text,
    )
    assert "tr_now" not in ids(res2)
    full = await ask(
        tables, "staging postgres port", reason="turn_start", session_id="se_now", lightweight=False
    )
    assert "tr_now" not in ids(
        full
    )  # full mode without a report: the whole current session is visible
    tool = await ask(tables, "staging postgres port", reason="tool_driven", session_id="se_now")
    assert "tr_now" in ids(tool)  # an explicit search may return the current session


async def test_structural_channel_matches_error_signatures(tmp_path: Path) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    res = await ask(tables, "Got ModuleNotFoundError: No module named 'yaml' again", emb=None)
    assert ids(res)[0] == "tr_yaml" and "structural" in res.hits[0].score_details["channels"]


async def test_tag_prefilter_falls_back_when_no_tagged_row_is_similar(tmp_path: Path) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    # "database" is a dictionary tag no FACT row carries as tag except staging
    res = await ask(tables, "What food allergy should recipes respect? (not about the database)")
    assert "tr_allergy" in ids(res)[:3]
    strict = await ask(
        tables,
        "What food allergy should recipes respect? (not about the database)",
        config={"retrieval": {"tag_filter": "strict"}},
        emb="default",
    )
    assert "vec_summary" not in json.dumps(
        [h.score_details for h in strict.hits if h.ref_id == "tr_allergy"]
    )


async def test_top_k_override_and_low_value_rows(tmp_path: Path) -> None:
    rows = trace_rows(FACTS)
    rows[0]["priority"] = 0.0  # a zero-priority row drops out unless low-value rows are included
    tables = await open_tables(tmp_path, rows)
    res = await ask(tables, "marine biologist Lisbon sister", top_k=TopK(tier2=2))
    assert len(res.hits) <= 2 and "tr_sister" not in ids(res)
    repair = await ask(tables, "marine biologist Lisbon sister", reason="decision_repair")
    assert "tr_sister" in ids(repair)


def _skill_rows(ns: Namespace) -> list[dict[str, Any]]:
    base = {
        "owner_agent_kind": ns.agent_kind,
        "owner_profile_id": ns.profile_id,
        "owner_workspace_id": None,
        "share_scope": "private",
        "share_target": None,
        "shared_at": None,
        "evidence_anchors": [],
        "support": 3,
        "gain": 0.2,
        "trials_attempted": 1,
        "trials_passed": 1,
        "source_policy_ids": [],
        "source_world_model_ids": [],
        "version": 1,
        "usage_count": 0,
        "last_used_at": None,
        "created_at": BASE_TS,
        "updated_at": BASE_TS,
        "edited_at": None,
    }
    out = []
    for sid, name, guide, status, eta in (
        (
            "sk_squash",
            "Squash git commits",
            "Squash recent commits with an interactive rebase.\n\n1. git rebase -i",
            "active",
            0.8,
        ),
        ("sk_old", "Squash with merge", "Squash commits by merging (deprecated).", "archived", 0.9),
        ("sk_weak", "Squash by reset", "Squash commits with git reset --soft.", "candidate", 0.05),
    ):
        text = f"{name}\n{guide}"
        out.append(
            {
                **base,
                "id": sid,
                "name": name,
                "status": status,
                "invocation_guide": guide,
                "eta": eta,
                "guidance_json": json.dumps(
                    {
                        "preference": ["rebase on a clean tree"],
                        "anti_pattern": ["force-push shared branches"],
                    }
                ),
                "search_text": text,
                "vec": embed_docs([text])[0],
            }
        )
    return out


def _world_rows(ns: Namespace) -> list[dict[str, Any]]:
    text = "Release pipeline\nThe CI runs on GitHub Actions; releases are tagged from main after squash merges."
    return [
        {
            "id": "wm_ci",
            "title": "Release pipeline",
            "body": text.split("\n", 1)[1],
            "structure_json": "{}",
            "policy_ids": [],
            "domain_tags": ["git"],
            "confidence": 0.6,
            "version": 1,
            "status": "active",
            "created_at": BASE_TS,
            "updated_at": BASE_TS,
            "edited_at": None,
            "search_text": text,
            "owner_agent_kind": ns.agent_kind,
            "owner_profile_id": ns.profile_id,
            "owner_workspace_id": None,
            "share_scope": "private",
            "share_target": None,
            "shared_at": None,
            "vec": embed_docs([text])[0],
        }
    ]


async def test_tier_one_skills_and_tier_three_world_models_are_retrieved(tmp_path: Path) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    db = await lancedb.connect_async(str(tmp_path / "lance"))
    dim = embedder().dimension
    skills = await db.create_table(
        "skills",
        data=pa.Table.from_pylist(
            [*_skill_rows(NS), {**_skill_rows(OTHER)[0], "id": "sk_foreign"}],
            schema=skills_schema(dim),
        ),
    )
    await skills.create_index("search_text", config=FTS())
    worlds = await db.create_table(
        "world_models", data=pa.Table.from_pylist(_world_rows(NS), schema=world_models_schema(dim))
    )
    tables.update(skills=skills, world_models=worlds, policies=None)
    res = await ask(
        tables,
        "how do I squash my last commits before the release?",
        reason="turn_start",
        lightweight=False,
    )
    kinds = {(h.tier, h.ref_kind, h.ref_id) for h in res.hits}
    assert (1, "skill", "sk_squash") in kinds
    assert (3, "world_model", "wm_ci") in kinds
    assert (2, "trace", "tr_git") in kinds
    assert not {"sk_old", "sk_weak", "sk_foreign"} & set(
        ids(res)
    )  # archived, low η, other namespace
    ctx = res.injected_context
    assert (
        "## Candidate skills" in ctx
        and "## Environment Knowledge" in ctx
        and "World model: Release pipeline" in ctx
    )
    assert "**Prefer**" in ctx and "force-push shared branches" in ctx
    assert res.tier_latency_ms.tier1 > 0 and res.tier_latency_ms.tier3 > 0


async def test_full_mode_builds_episode_rollups_from_several_steps(tmp_path: Path) -> None:
    steps = [
        ("s1", "Deploy the billing service to the staging cluster.", "Built the billing image."),
        (
            "s2",
            "Deploy billing: run the database migrations on staging.",
            "Migrations applied on staging.",
        ),
        (
            "s3",
            "Deploy billing: switch staging traffic to the new pods.",
            "Traffic switched, billing deployed.",
        ),
    ]
    rows = trace_rows(steps, session="se_dep")
    for r in rows:
        r["episode_id"] = "ep_deploy"
        r["value"] = 0.5
    tables = await open_tables(tmp_path, rows + trace_rows(FACTS))
    res = await ask(
        tables, "how did we deploy the billing service to staging last time?", lightweight=False
    )
    assert {"tr_s1", "tr_s2", "tr_s3"} & set(ids(res))
    # the roll-up exists in the tier-2 pool (MMR may prefer its member traces in the final packet)
    run = _Run(
        RetrievalContext(
            query=RetrievalQuery(
                agent="hermes", query="how did we deploy the billing service to staging?"
            ),
            namespace=NS,
            tables=tables,
            embedder=embedder(),
            lightweight=False,
        )
    )
    await run.collect()
    (episodes,) = [p for p in run.pools if p.ref_kind == "episode"]
    ep = episodes.items["ep_deploy"]
    assert ep.row["summary"].startswith("Past similar episode") and len(ep.row["member_ids"]) == 3
    assert ep.channels and ep.cosine is not None and ep.cosine >= 0.45
    lw = _Run(
        RetrievalContext(
            query=run.query, namespace=NS, tables=tables, embedder=embedder(), lightweight=True
        )
    )
    await lw.collect()
    assert not [p for p in lw.pools if p.ref_kind == "episode"]  # lightweight mode has no roll-ups


def _policy(
    pid: str,
    title: str,
    *,
    episodes: list[str],
    feedback: list[str],
    guidance: dict[str, list[str]],
) -> dict[str, Any]:
    text = f"{title}\nWhen staging Postgres connections fail, check the non-default port first."
    return {
        "id": pid,
        "title": title,
        "trigger": "staging database connection refused",
        "procedure": "connect with -p 5433",
        "verification": "psql connects",
        "boundary": "staging only",
        "support": 2,
        "gain": 0.3,
        "status": "active",
        "experience_type": "repair_validated",
        "evidence_polarity": "positive",
        "salience": 0.4,
        "confidence": 0.7,
        "skill_eligible": True,
        "guidance_json": json.dumps(guidance),
        "source_episode_ids": episodes,
        "source_feedback_ids": feedback,
        "source_trace_ids": [],
        "created_at": BASE_TS,
        "updated_at": BASE_TS,
        "edited_at": None,
        "search_text": text,
        "owner_agent_kind": NS.agent_kind,
        "owner_profile_id": NS.profile_id,
        "owner_workspace_id": None,
        "share_scope": "private",
        "share_target": None,
        "shared_at": None,
        "vec": embed_docs([text])[0],
    }


async def test_full_mode_adds_feedback_experiences_and_linked_policy_guidance(
    tmp_path: Path,
) -> None:
    tables = await open_tables(tmp_path, trace_rows(FACTS))
    db = await lancedb.connect_async(str(tmp_path / "lance"))
    rows = [
        _policy(
            "po_fb",
            "Use port 5433 for staging",
            episodes=[],
            feedback=["fb_1"],
            guidance={"preference": ["pass -p 5433 explicitly"], "anti_pattern": []},
        ),
        _policy(
            "po_linked",
            "Staging port habit",
            episodes=["ep_staging"],
            feedback=[],
            guidance={"preference": [], "anti_pattern": ["assume port 5432 on staging"]},
        ),
    ]
    tables["policies"] = await db.create_table(
        "policies", data=pa.Table.from_pylist(rows, schema=policies_schema(embedder().dimension))
    )
    res = await ask(tables, "staging postgres connection refused, which port?", lightweight=False)
    kinds = {(h.ref_kind, h.ref_id) for h in res.hits}
    assert ("experience", "po_fb") in kinds and (
        "experience",
        "po_linked",
    ) not in kinds  # only feedback-derived
    assert ("trace", "tr_staging") in kinds
    ctx = res.injected_context
    assert "## Experiences" in ctx and "Trigger: staging database connection refused" in ctx
    assert "**Avoid**" in ctx and "assume port 5432 on staging" in ctx  # linked through ep_staging
    light = await ask(tables, "staging postgres connection refused, which port?", lightweight=True)
    assert (
        "## Experiences" not in light.injected_context
        and "Decision guidance" not in light.injected_context
    )
