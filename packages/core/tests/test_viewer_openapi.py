"""The OpenAPI document matches the running server: every documented operation answers with a body
that fits its schema, and every route the server dispatches is documented."""

from __future__ import annotations

import sys
from pathlib import Path

from stratamem.core.viewer import openapi
from stratamem.core.viewer.routes import ROUTES

sys.path.insert(0, str(Path(__file__).parent))
from viewer_support import call, running_viewer, turn


async def test_every_documented_operation_answers_as_documented(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with running_viewer(tmp_path / "home", workspace__roots=[str(project)]) as (
        core,
        viewer,
    ):
        tid = await turn(core, "s1", "How are secrets stored?", "In the vault.")
        await core.flush(10)
        doc = (await call(viewer.url + "api/openapi.json")).json()
        assert doc == openapi.document()
        episode = (await call(viewer.url + "api/episodes")).json()["items"][0]["id"]
        ids = {"traces": tid, "episodes": episode}
        bodies = {
            ("PATCH", "/api/config"): {"retrieval": {"tier3_top_k": 2}},
            ("PATCH", "/api/traces/{id}"): {"summary": "vault-stored secrets"},
            ("POST", "/api/feedback"): {"trace_id": tid, "polarity": "positive"},
            ("PUT", "/api/memory"): {"content": "# Project Memory\n\n## Context\nvault\n"},
            ("PUT", "/api/memory/file"): {"path": "DREAMS.md", "content": "# Dreams\n"},
        }
        query = {
            "/api/retrieval/preview": "?q=secrets",
            "/api/memory/file": "?path=MEMORY.md",
            "/api/events/recent": "?limit=5",
        }
        checked = 0
        for path, ops in doc["paths"].items():
            for method, op in ops.items():
                if path == "/events" or (method, path) == ("delete", "/api/traces/{id}"):
                    continue
                kind = path.split("/")[2]
                url = viewer.url + path.lstrip("/").replace("{id}", ids.get(kind, "missing"))
                reply = await call(
                    url + query.get(path, ""), method.upper(), bodies.get((method.upper(), path))
                )
                assert str(reply.status) in op["responses"], (method, path, reply.status)
                schema = op["responses"][str(reply.status)]["content"]["application/json"]
                problems = openapi.check(schema["schema"], reply.json())
                assert problems == [], (method, path, reply.status, problems)
                checked += 1
        assert checked >= 25
        deleted = await call(viewer.url + f"api/traces/{tid}", "DELETE")
        assert openapi.check({"$ref": "#/components/schemas/Deleted"}, deleted.json()) == []


async def test_every_routed_path_is_in_the_document_and_unknown_api_paths_are_404(
    tmp_path: Path,
) -> None:
    doc = openapi.document()
    for route in ROUTES:
        assert route.method.lower() in doc["paths"][route.path]
    async with running_viewer(tmp_path) as (_, viewer):
        reply = await call(viewer.url + "api/not-a-route")
        assert reply.status == 404
        assert openapi.check({"$ref": "#/components/schemas/Error"}, reply.json()) == []


def test_the_schema_checker_rejects_what_does_not_fit() -> None:
    schema = {"$ref": "#/components/schemas/Trace"}
    assert openapi.check(schema, {"id": "x"})  # missing required keys
    assert openapi.check({"type": "integer"}, True)  # a bool is not an integer
    assert openapi.check({"type": "array", "items": {"type": "string"}}, ["a", 1])
