"""The viewer shows each caller what its token may see, and reads the home without scanning traces.

Three namespaces (two profiles of one agent kind and another kind), each with a distinctive fact; a
token scoped to one of them gets every listing, detail, metric and event of its own namespace and
nothing of the others'; the owner sees them all, or one when it names it. The namespace list and the
figures come from engine aggregates: a spy on the store's scan API sees no read of the traces table.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import Namespace, RetrievalQuery

sys.path.insert(0, str(Path(__file__).parent))
from viewer_support import call, running_viewer, turn

ALPHA = Namespace(agent_kind="alpha", profile_id="pa")
ALPHA_B = Namespace(agent_kind="alpha", profile_id="pb")
BETA = Namespace(agent_kind="beta", profile_id="pb")
TOKENS = {
    "beta-only": ("beta/pb",),
    "alpha-pb": ("alpha/pb",),
    "gamma-any": ("gamma/*",),  # a pattern whose namespaces hold nothing yet
    "owner-token": ("*",),
}
BETA_TOKEN = {"Authorization": "Bearer beta-only"}
#: words no port, timestamp, count or id can spell (bare 4-digit codes matched a random port or a
#: millisecond timestamp in a response about once in a few hundred runs)
SECRETS = {"alpha/pa": b"kestrel4711", "alpha/pb": b"osprey3386", "beta/pb": b"heron9922"}


async def _three_namespaces(core: Any) -> dict[str, str]:
    """One turn per namespace (two for beta); the trace id of each namespace's first turn."""
    ids = {
        "alpha/pa": await turn(core, "sa", "alpha: the vault code is kestrel4711", "Noted.", ALPHA),
        "alpha/pb": await turn(
            core, "sab", "alpha pb: the locker code is osprey3386", "Ok.", ALPHA_B
        ),
        "beta/pb": await turn(core, "sb", "beta: the gate code is heron9922", "Sure.", BETA),
    }
    await turn(core, "sb", "beta again: the gate code heron9922 still holds", "Right.", BETA)
    for ns in (ALPHA, BETA):  # a recall measured in each namespace (recall latency samples)
        await core.search(RetrievalQuery(agent="t", query="code", namespace=ns))
    return ids


def _leaks(body: bytes, *, allowed: str) -> list[str]:
    return [ns for ns, secret in SECRETS.items() if ns != allowed and secret in body]


def _names_alpha(body: bytes) -> bool:
    """An alpha namespace, owner or text in ``body`` (a trace's reward ``alpha`` field aside)."""
    return any(m in body for m in (b"alpha/", b': "alpha"', b"alpha:", b"alpha pb"))


async def test_a_scoped_token_sees_its_namespace_in_every_listing_and_metric_and_nothing_else(
    tmp_path: Path,
) -> None:
    async with running_viewer(tmp_path, tokens=TOKENS) as (core, viewer):
        ids = await _three_namespaces(core)
        eps = {
            ns: (await call(viewer.url + f"api/traces/{tid}")).json()["episode_id"]
            for ns, tid in ids.items()
        }
        before = (tmp_path / "config.yaml").read_bytes()
        get = lambda path: call(viewer.url + path, headers=BETA_TOKEN)  # noqa: E731

        system = await get("api/system")
        assert system.status == 200
        assert [n["namespace"] for n in system.json()["namespaces"]] == ["beta/pb"]
        assert "paths" not in system.json() and "pid" not in system.json()
        assert system.json()["health"]["counts"]["traces"] == 2  # its own, not the home's four
        spaces = (await get("api/namespaces")).json()
        assert spaces["total"] == 1 and spaces["items"][0]["traces"] == 2

        for path in (
            "api/system",
            "api/namespaces",
            "api/traces",
            "api/traces?namespace=beta/pb",
            "api/episodes",
            "api/policies",
            "api/world-models",
            "api/skills",
            "api/metrics",
            "api/events/recent",
            "api/retrieval/preview?q=vault+locker+gate+code",
        ):
            got = await get(path)
            assert got.status == 200, (path, got.status, got.body[:200])
            assert _leaks(got.body, allowed="beta/pb") == [], path
            assert not _names_alpha(got.body), path
        assert b"heron9922" in (await get("api/traces")).body

        metrics = (await get("api/metrics")).json()
        assert metrics["memory_growth"][-1]["total"] == 2  # beta's two traces, not all four
        assert {s["namespace"] for s in metrics["recall_latency"]} == {"beta/pb"}

        # another namespace named, or one of its rows addressed: refused or not found, unchanged
        for path in (
            "api/traces?namespace=alpha/pa",
            "api/metrics?namespace=alpha/pa",
            "api/retrieval/preview?q=vault&namespace=alpha/pa",
        ):
            got = await get(path)
            assert got.status == 403 and b"kestrel4711" not in got.body, path
        for path in (f"api/traces/{ids['alpha/pa']}", f"api/episodes/{eps['alpha/pa']}"):
            got = await get(path)
            assert got.status == 404 and b"kestrel4711" not in got.body, path
        alpha_trace = f"api/traces/{ids['alpha/pa']}"
        patch = await call(
            viewer.url + alpha_trace, "PATCH", {"summary": "beta was here"}, headers=BETA_TOKEN
        )
        assert patch.status == 404
        assert (await call(viewer.url + alpha_trace, "DELETE", headers=BETA_TOKEN)).status == 404
        feedback = await call(
            viewer.url + "api/feedback",
            "POST",
            {"trace_id": ids["alpha/pa"], "polarity": "negative"},
            headers=BETA_TOKEN,
        )
        assert feedback.status == 404
        alpha = (await call(viewer.url + alpha_trace)).json()  # the owner (loopback) sees it intact
        assert "kestrel4711" in alpha["user_text"] and alpha["summary"] != "beta was here"

        # its own rows: readable and writable
        own = await call(
            viewer.url + f"api/traces/{ids['beta/pb']}",
            "PATCH",
            {"summary": "the gate"},
            headers=BETA_TOKEN,
        )
        assert own.status == 200 and own.json()["summary"] == "the gate"
        assert (await get(f"api/episodes/{eps['beta/pb']}")).status == 200

        # the owner's own routes
        for path in ("api/config", "api/logs/tail", "api/memory"):
            assert (await get(path)).status == 403, path
        write = await call(
            viewer.url + "api/config",
            "PATCH",
            {"retrieval": {"tier2_top_k": 7}},
            headers=BETA_TOKEN,
        )
        assert write.status == 403
        assert (tmp_path / "config.yaml").read_bytes() == before


async def test_a_scoped_event_stream_carries_its_namespaces_events_only(tmp_path: Path) -> None:
    async with running_viewer(tmp_path, tokens=TOKENS) as (core, viewer):
        await turn(
            core, "sa0", "alpha before: code kestrel4711", "Noted.", ALPHA
        )  # in the replay ring
        reader, writer = await asyncio.open_connection(viewer.host, viewer.port)
        writer.write(
            b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer beta-only\r\n\r\n"
        )
        await writer.drain()
        assert b"text/event-stream" in await reader.readuntil(b"\r\n\r\n")
        await reader.readuntil(b"event: hello")
        await turn(core, "sa", "alpha: the vault code is kestrel4711", "Noted.", ALPHA)
        beta_trace = await turn(core, "sb", "beta: the gate code is heron9922", "Sure.", BETA)
        seen = b""
        async with asyncio.timeout(30):
            while beta_trace.encode() not in seen:
                chunk = await reader.read(65536)
                assert chunk, seen
                seen += chunk
        writer.close()
        assert b"beta/pb" in seen
        assert not _names_alpha(seen) and b"event: log" not in seen


async def test_the_owner_sees_every_namespace_or_the_one_it_names(tmp_path: Path) -> None:
    async with running_viewer(tmp_path, tokens=TOKENS) as (core, viewer):
        await _three_namespaces(core)
        owner = {"Authorization": "Bearer owner-token"}
        for headers in ({}, owner):  # loopback without a token is the owner too
            spaces = (await call(viewer.url + "api/namespaces", headers=headers)).json()
            assert {n["namespace"]: n["traces"] for n in spaces["items"]} == {
                "alpha/pa": 1,
                "alpha/pb": 1,
                "beta/pb": 2,
            }
            traces = await call(viewer.url + "api/traces", headers=headers)
            assert all(s in traces.body for s in SECRETS.values())
            growth = (await call(viewer.url + "api/metrics", headers=headers)).json()
            assert growth["memory_growth"][-1]["total"] == 4
        one = (await call(viewer.url + "api/metrics?namespace=alpha/pa")).json()
        assert one["memory_growth"][-1]["total"] == 1
        assert {s["namespace"] for s in one["recall_latency"]} == {"alpha/pa"}
        only = await call(viewer.url + "api/traces?namespace=alpha/pb")
        assert _leaks(only.body, allowed="alpha/pb") == [] and b"osprey3386" in only.body
        paged = (await call(viewer.url + "api/namespaces?limit=1&offset=1")).json()
        assert paged["total"] == 3 and len(paged["items"]) == 1
        # a second profile of the same kind is another namespace: its token sees only its own
        pb = await call(viewer.url + "api/traces", headers={"Authorization": "Bearer alpha-pb"})
        assert pb.status == 200 and _leaks(pb.body, allowed="alpha/pb") == []


async def test_namespaces_and_figures_never_scan_the_traces_table(tmp_path: Path) -> None:
    """The spy wraps the real store's scan API (it answers as before) and records each read."""
    async with running_viewer(tmp_path, tokens=TOKENS) as (core, viewer):
        await _three_namespaces(core)
        await core.flush(10)
        store = core.services.store
        scans: list[tuple[str, int]] = []
        real_scan = store.scan

        async def spy(name: str, scope: Any, where: Any, limit: int, **kw: Any) -> Any:
            scans.append((name, limit))
            return await real_scan(name, scope, where, limit, **kw)

        store.scan = spy
        try:
            for path in ("api/system", "api/metrics", "api/retrieval/preview?q=code"):
                got = await call(viewer.url + path)
                assert got.status == 200, (path, got.body[:200])
            owner_scans = [s for s in scans if s[0] == "traces"]
            assert owner_scans == []  # the owner's view of every namespace
            read_before = store.rows_read  # rows any store read returned (scan, get_rows)
            for headers in ({}, BETA_TOKEN):
                for path in ("api/system", "api/namespaces", "api/metrics"):
                    got = await call(viewer.url + path, headers=headers)
                    assert got.status == 200, (path, got.body[:200])
            assert store.rows_read == read_before  # figures come from counts, not rows
        finally:
            del store.scan
        assert [s for s in scans if s[0] == "traces"] == []


async def test_a_pattern_token_with_no_memories_yet_learns_nothing_about_other_rows(
    tmp_path: Path,
) -> None:
    async with running_viewer(tmp_path, tokens=TOKENS) as (core, viewer):
        ids = await _three_namespaces(core)
        gamma = {"Authorization": "Bearer gamma-any"}
        spaces = (await call(viewer.url + "api/namespaces", headers=gamma)).json()
        assert spaces["items"] == [] and spaces["total"] == 0
        growth = (await call(viewer.url + "api/metrics", headers=gamma)).json()
        assert growth["memory_growth"] == [] and growth["recall_latency"] == []
        for tid in ids.values():  # an existing row answers like a missing one
            got = await call(viewer.url + f"api/traces/{tid}", headers=gamma)
            assert got.status == 404
        missing = await call(viewer.url + "api/traces/tr_doesnotexist", headers=gamma)
        assert missing.status == 404
        listing = await call(viewer.url + "api/traces?namespace=gamma/g1", headers=gamma)
        assert listing.status == 200 and listing.json()["items"] == []
