"""Hostile input to the viewer gets clear typed errors and changes nothing: traversal, big or broken
bodies, non-loopback callers without a token, cross-origin writes, a non-loopback bind without one."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest

from stratamem.contract.errors import StratamemError
from stratamem.core.viewer import ViewerServer

sys.path.insert(0, str(Path(__file__).parent))
from viewer_support import call, running_viewer, turn


async def raw(host: str, port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(data)
    await writer.drain()
    out = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return out


def _outward_ip() -> str | None:
    """A non-loopback address of this machine (the route to a documentation prefix; nothing is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            ip = str(s.getsockname()[0])
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


async def test_path_traversal_is_refused_for_static_files_and_workspace_files(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    async with running_viewer(home, workspace__roots=[str(project)]) as (_, viewer):
        for target in (
            b"/../secret.txt",
            b"/assets/../../secret.txt",
            b"/%2e%2e/%2e%2e/secret.txt",
            b"/..%2fsecret.txt",
        ):
            reply = await raw(
                viewer.host,
                viewer.port,
                b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            )
            assert reply.startswith(b"HTTP/1.1 400"), (target, reply[:80])
            assert b"path traversal" in reply and b"top secret" not in reply
        before = sorted(p.name for p in project.rglob("*"))
        for path in ("../secret.txt", "../../secret.txt", "/etc/passwd", "notes/evil.md"):
            got = await call(viewer.url + f"api/memory/file?path={path}")
            assert got.status in (400, 403), (path, got.body)
            assert "top secret" not in got.body.decode()
            put = await call(
                viewer.url + "api/memory/file", "PUT", {"path": path, "content": "pwned"}
            )
            assert put.status in (400, 403), (path, put.body)
            assert put.json()["error"]["code"] in ("invalid_argument", "permission_denied")
        assert sorted(p.name for p in project.rglob("*")) == before
        assert secret.read_text(encoding="utf-8") == "top secret"


async def test_oversized_bodies_get_413_and_change_nothing(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, viewer):
        tid = await turn(core, "s1", "keep me", "as is")
        huge = b'{"summary": "' + b"x" * (2 * 1024 * 1024) + b'"}'
        reply = await call(viewer.url + f"api/traces/{tid}", "PATCH", raw=huge)
        assert reply.status == 413
        assert reply.json()["error"]["details"]["max_bytes"] == 1024 * 1024
        listed = (await call(viewer.url + "api/traces")).json()["items"]
        assert listed[0]["summary"] != "x" * 10


async def test_bad_json_and_wrong_content_type_are_400_and_415(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (_, viewer):
        before = (tmp_path / "config.yaml").read_bytes()
        broken = await call(viewer.url + "api/config", "PATCH", raw=b'{"retrieval": ')
        assert broken.status == 400
        assert broken.json()["error"]["code"] == "invalid_argument"
        assert "not valid JSON" in broken.json()["error"]["message"]
        not_object = await call(viewer.url + "api/config", "PATCH", [1, 2])
        assert not_object.status == 400
        form = await call(
            viewer.url + "api/config",
            "PATCH",
            raw=b"retrieval.tier2_top_k=9",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert form.status == 415
        assert (tmp_path / "config.yaml").read_bytes() == before
        malformed = await raw(viewer.host, viewer.port, b"NONSENSE\r\n\r\n")
        assert malformed.startswith(b"HTTP/1.1 400")
        wrong_method = await call(viewer.url + "api/system", "DELETE")
        assert wrong_method.status == 405
        assert wrong_method.json()["error"]["code"] == "unknown_method"


async def test_cross_origin_writes_and_foreign_host_names_are_refused(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (_, viewer):
        before = (tmp_path / "config.yaml").read_bytes()
        reply = await call(
            viewer.url + "api/config",
            "PATCH",
            {"retrieval": {"tier2_top_k": 7}},
            headers={"Origin": "http://evil.example"},
        )
        assert reply.status == 403 and "cross-origin" in reply.json()["error"]["message"]
        rebound = await raw(
            viewer.host,
            viewer.port,
            b"GET /api/system HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
        )
        assert rebound.startswith(b"HTTP/1.1 403")
        assert (tmp_path / "config.yaml").read_bytes() == before


async def test_a_non_loopback_bind_without_a_token_is_refused(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, _):
        viewer = ViewerServer(core)
        with pytest.raises(StratamemError) as err:
            await viewer.start("0.0.0.0", 0)
        assert err.value.code.value == "permission_denied"
        assert "without a token" in err.value.message


async def test_non_loopback_callers_need_the_token(tmp_path: Path) -> None:
    ip = _outward_ip()
    if ip is None:
        pytest.skip("this machine has no non-loopback address")
    async with running_viewer(tmp_path, tokens=("s3cret-token",), host="0.0.0.0") as (_, viewer):
        base = f"http://{ip}:{viewer.port}/"
        before = (tmp_path / "config.yaml").read_bytes()
        anonymous = await call(base + "api/system")
        assert anonymous.status == 401
        assert anonymous.json()["error"]["code"] == "unauthenticated"
        write = await call(base + "api/config", "PATCH", {"retrieval": {"tier2_top_k": 7}})
        assert write.status == 401
        wrong = await call(base + "api/system", headers={"Authorization": "Bearer nope"})
        assert wrong.status == 401
        good = await call(base + "api/system", headers={"Authorization": "Bearer s3cret-token"})
        assert good.status == 200
        via_query = await call(base + "api/system?token=s3cret-token")
        assert via_query.status == 200 and "HttpOnly" in via_query.headers["set-cookie"]
        assert (tmp_path / "config.yaml").read_bytes() == before
        local = await call(f"http://127.0.0.1:{viewer.port}/api/system")
        assert local.status == 200
