"""The viewer's JSON API over a real core: lists, details, edits, feedback, retrieval preview, config."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from stratamem.contract.dtos import RetrievalQuery

sys.path.insert(0, str(Path(__file__).parent))
from viewer_support import NS, call, running_viewer, turn


async def test_system_reports_version_paths_health_and_namespaces(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        await turn(core, "s1", "How do I rotate the nginx logs?", "Use logrotate daily.")
        await core.flush(10)
        data = (await call(viewer.url + "api/system")).json()
        assert data["paths"]["home"] == str(tmp_path)
        assert data["paths"]["config"].endswith("config.yaml")
        assert data["health"]["ok"] is True
        assert data["health"]["counts"]["traces"] == 1
        assert data["namespaces"][0]["namespace"] == "openclaw/default"
        assert data["viewer_url"] == viewer.url


async def test_traces_list_detail_edit_and_delete_go_through_the_core(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        tid = await turn(core, "s1", "What port does postgres use?", "5432 by default.")
        listed = (await call(viewer.url + "api/traces")).json()["items"]
        assert [t["id"] for t in listed] == [tid]
        assert {"value", "alpha", "priority", "r_human"} <= set(listed[0])
        detail = (await call(viewer.url + f"api/traces/{tid}")).json()
        assert detail["user_text"] == "What port does postgres use?"

        edited = await call(
            viewer.url + f"api/traces/{tid}",
            "PATCH",
            {"summary": "postgres listens on 5432 (zebra-marker)", "tags": ["db", "ports"]},
        )
        assert edited.status == 200, edited.body
        assert edited.json()["summary"] == "postgres listens on 5432 (zebra-marker)"
        stored = await core.get_trace(tid, NS)
        assert stored is not None and stored.tags == ("db", "ports")
        found = (await call(viewer.url + "api/traces?q=zebra-marker")).json()["items"]
        assert [t["id"] for t in found] == [tid]

        gone = await call(viewer.url + f"api/traces/{tid}", "DELETE")
        assert gone.json() == {"deleted": 1}
        assert await core.get_trace(tid, NS) is None
        missing = await call(viewer.url + f"api/traces/{tid}")
        assert missing.status == 404
        assert missing.json()["error"]["code"] == "trace_not_found"


async def test_an_edited_summary_is_what_search_finds(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        tid = await turn(core, "s1", "deploy notes", "ran the deploy script")
        await core.flush(10)
        await call(
            viewer.url + f"api/traces/{tid}", "PATCH", {"summary": "quokka deployment checklist"}
        )
        result = await core.search(RetrievalQuery(agent="cli", query="quokka", namespace=NS))
        assert tid in {h.ref_id for h in result.hits} | {h.source_trace_id for h in result.hits}


async def test_retrieval_preview_shows_the_hit_search_returns(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        await turn(core, "s1", "Where are the kafka brokers configured?", "In brokers.yaml.")
        await turn(core, "s2", "What is the capital of France?", "Paris.")
        await core.flush(10)
        query = "kafka brokers configuration"
        direct = await core.search(
            RetrievalQuery(agent="cli", query=query, namespace=NS, reason="turn_start")
        )
        assert direct.hits
        preview = (
            await call(viewer.url + "api/retrieval/preview?q=kafka%20brokers%20configuration")
        ).json()
        assert preview["namespace"] == "openclaw/default"
        shown = [h for tier in preview["tiers"].values() for h in tier]
        assert {h["ref_id"] for h in shown} == {h.ref_id for h in direct.hits}
        assert all("score_details" in h and "rank" in h for h in shown)
        assert preview["injected_context"] == direct.injected_context


async def test_episodes_come_with_their_timeline(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        first = await turn(core, "s1", "Set up the CI pipeline for the repo", "Added a workflow.")
        episodes = (await call(viewer.url + "api/episodes")).json()["items"]
        assert len(episodes) == 1
        detail = (await call(viewer.url + f"api/episodes/{episodes[0]['id']}")).json()
        assert [t["id"] for t in detail["timeline"]] == [first]


async def test_feedback_is_stored_against_the_trace(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        tid = await turn(core, "s1", "How to restart redis?", "systemctl restart redis")
        reply = await call(
            viewer.url + "api/feedback",
            "POST",
            {"trace_id": tid, "polarity": "positive", "magnitude": 1.0, "rationale": "worked"},
        )
        assert reply.status == 200, reply.body
        assert reply.json()["trace_id"] == tid
        trace = await core.get_trace(tid, NS)
        assert trace is not None and trace.value > 0
        bad = await call(viewer.url + "api/feedback", "POST", {"trace_id": tid, "polarity": "meh"})
        assert bad.status == 400 and bad.json()["error"]["details"]["field"] == "polarity"


async def test_empty_layers_list_as_empty_and_unknown_ids_are_typed_404s(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (_, viewer):
        for path in ("policies", "world-models", "skills", "episodes", "traces"):
            assert (await call(viewer.url + f"api/{path}")).json()["items"] == []
        codes = {}
        for path in ("policies", "world-models", "skills", "episodes"):
            reply = await call(viewer.url + f"api/{path}/nope")
            assert reply.status == 404
            codes[path] = reply.json()["error"]["code"]
        assert codes == {
            "policies": "policy_not_found",
            "world-models": "world_model_not_found",
            "skills": "skill_not_found",
            "episodes": "episode_not_found",
        }


async def test_config_is_masked_and_a_patch_lands_in_config_yaml(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "# my comment\nversion: 1\nllm:\n  api_key: sk-supersecretvalue123\n", encoding="utf-8"
    )
    async with running_viewer(tmp_path) as (_, viewer):
        cfg = (await call(viewer.url + "api/config")).json()["config"]
        assert cfg["llm"]["api_key"] == "••••"
        assert "supersecret" not in str(cfg)
        cfg["retrieval"]["tier2_top_k"] = 9
        reply = await call(
            viewer.url + "api/config",
            "PATCH",
            {"retrieval": {"tier2_top_k": 9}, "llm": {"api_key": "••••"}},
        )
        assert reply.status == 200, reply.body
        assert reply.json()["restart_required"] is True
        text = (tmp_path / "config.yaml").read_text(encoding="utf-8")
        assert "tier2_top_k: 9" in text
        assert "# my comment" in text
        assert "sk-supersecretvalue123" in text  # the masked secret was kept, not overwritten


async def test_an_invalid_config_patch_names_the_key_and_writes_nothing(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (_, viewer):
        before = (tmp_path / "config.yaml").read_bytes()
        out_of_range = await call(
            viewer.url + "api/config", "PATCH", {"retrieval": {"mmr_lambda": 3}}
        )
        assert out_of_range.status == 400
        assert out_of_range.json()["error"]["code"] == "config_invalid"
        assert out_of_range.json()["error"]["details"]["key"] == "retrieval.mmr_lambda"
        unknown = await call(viewer.url + "api/config", "PATCH", {"retrieval": {"typo_key": 1}})
        assert unknown.json()["error"]["details"]["key"] == "retrieval.typo_key"
        assert (tmp_path / "config.yaml").read_bytes() == before


async def test_logs_tail_filters_by_level_and_channel(tmp_path: Path) -> None:
    from stratamem.core.telemetry import get_logger, reset_logging
    from stratamem.core.telemetry.logs import configure_logging

    configure_logging(tmp_path, {"logging": {"level": "info"}})
    try:
        async with running_viewer(tmp_path) as (_, viewer):
            log = get_logger("viewer-test")
            log.info("plain.info", n=1)
            log.error("boom.error", token="abc123secret")
            everything = (await call(viewer.url + "api/logs/tail?limit=50")).json()["items"]
            assert {"plain.info", "boom.error"} <= {r.get("event") for r in everything}
            errors = (await call(viewer.url + "api/logs/tail?level=error")).json()["items"]
            assert {r["event"] for r in errors} == {"boom.error"}
            assert "abc123secret" not in str(errors)
            chan = (await call(viewer.url + "api/logs/tail?channel=viewer-test")).json()["items"]
            assert {r["channel"] for r in chan} == {"viewer-test"}
            bad = await call(viewer.url + "api/logs/tail?level=loud")
            assert bad.status == 400
    finally:
        reset_logging()


async def test_sse_delivers_core_events_and_log_lines_live(tmp_path: Path) -> None:
    from stratamem.core.telemetry import get_logger

    async with running_viewer(tmp_path) as (core, viewer):
        reader, writer = await asyncio.open_connection(viewer.host, viewer.port)
        writer.write(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"text/event-stream" in head
        await reader.readuntil(b"event: hello")
        await turn(core, "s1", "Live event please", "Sure.")
        get_logger("viewer-test").warning("live.log.line", api_key="sk-shouldnotleak99")
        seen = b""
        async with asyncio.timeout(10):
            while b"turn.captured" not in seen or b"live.log.line" not in seen:
                seen += await reader.read(65536)
        assert b"event: core" in seen and b"event: log" in seen
        assert b"sk-shouldnotleak99" not in seen
        writer.close()


async def _sse_until(reader: asyncio.StreamReader, marker: bytes) -> bytes:
    seen = b""
    async with asyncio.timeout(10):
        while marker not in seen:
            chunk = await reader.read(65536)
            assert chunk, seen
            seen += chunk
    return seen


async def test_sse_resumes_after_since_or_last_event_id_and_refuses_a_bad_seq(
    tmp_path: Path,
) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        await turn(core, "s1", "first turn", "ok")
        await turn(core, "s2", "second turn", "ok")
        events = core.bus.recent()
        mark = events[len(events) // 2].seq
        newest = events[-1].seq
        for head in (
            f"GET /events?since={mark} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            f"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: {mark}\r\n\r\n",
        ):
            reader, writer = await asyncio.open_connection(viewer.host, viewer.port)
            writer.write(head.encode())
            await writer.drain()
            seen = await _sse_until(reader, f"id: {newest}\n".encode())
            ids = [int(line[4:]) for line in seen.decode().splitlines() if line.startswith("id: ")]
            assert ids == [e.seq for e in events if e.seq > mark]
            writer.close()
        bad = await call(viewer.url + "events?since=abc")
        assert bad.status == 400 and bad.json()["error"]["details"]["field"] == "since"


async def test_sse_resuming_with_a_seq_from_before_a_restart_gets_this_epochs_events(
    tmp_path: Path,
) -> None:
    """A browser's EventSource resends its Last-Event-ID after ``serve`` restarted (seqs begin at 1
    again): the stream must not skip this epoch's events until they pass the old number."""
    async with running_viewer(tmp_path) as (core, viewer):
        await turn(core, "s1", "before the reconnect", "ok")
        stale = core.bus.recent()[-1].seq + 1000
        reader, writer = await asyncio.open_connection(viewer.host, viewer.port)
        writer.write(
            f"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: {stale}\r\n\r\n".encode()
        )
        await writer.drain()
        replayed = await _sse_until(reader, b"turn.captured")
        assert b"id: 1\n" in replayed
        await turn(core, "s2", "after the reconnect", "ok")
        newest = core.bus.recent()[-1].seq
        live = await _sse_until(reader, f"id: {newest}\n".encode())
        assert b"turn.captured" in live
        writer.close()


async def test_the_trace_listing_pages_by_cursor_without_gaps_or_repeats(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        made = {await turn(core, f"s{i}", f"fact number {i}", "ok") for i in range(7)}
        seen: list[str] = []
        url = viewer.url + "api/traces?limit=3"
        while True:
            page = (await call(url)).json()
            seen += [t["id"] for t in page["items"]]
            if page["next"] is None:
                break
            url = viewer.url + f"api/traces?limit=3&after={page['next']}"
        assert len(seen) == len(set(seen)) and set(seen) == made
        bad = await call(viewer.url + "api/traces?after=not-a-cursor")
        assert bad.status == 400 and bad.json()["error"]["details"]["field"] == "after"


async def test_world_models_filter_by_status_as_policies_and_skills_do(tmp_path: Path) -> None:
    # the engine honoured `status` for world models, but the route did not declare it: the
    # OpenAPI document (and so generated clients) offered no way to ask for archived ones
    async with running_viewer(tmp_path) as (core, viewer):
        rows = [
            {
                "id": f"wm_{status}",
                "title": f"{status} model",
                "search_text": f"{status} model",
                "status": status,
                "created_at": 1_700_000_000_000 + i,
                "updated_at": 1_700_000_000_000 + i,
                "owner_agent_kind": NS.agent_kind,
                "owner_profile_id": NS.profile_id,
                "share_scope": "private",
            }
            for i, status in enumerate(("active", "archived"))
        ]
        await core.store.upsert("world_models", rows)
        listed = (await call(viewer.url + "api/world-models?status=archived")).json()["items"]
        assert [r["id"] for r in listed] == ["wm_archived"]
        spec = (await call(viewer.url + "api/openapi.json")).json()
        params = spec["paths"]["/api/world-models"]["get"]["parameters"]
        assert "status" in {p["name"] for p in params}


async def test_a_listing_filter_is_bounded_where_the_engine_bounds_it(tmp_path: Path) -> None:
    from stratamem.core.validation import MAX_FILTER_CHARS

    async with running_viewer(tmp_path) as (_, viewer):
        for path in ("traces", "policies", "world-models", "skills"):
            ok = await call(viewer.url + f"api/{path}?q=" + "a" * MAX_FILTER_CHARS)
            assert ok.status == 200, (path, ok.body)
            long = await call(viewer.url + f"api/{path}?q=" + "a" * (MAX_FILTER_CHARS + 1))
            assert long.status == 400 and long.json()["error"]["details"]["field"] == "q", path
