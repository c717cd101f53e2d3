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


async def raw(host: str, port: int, data: bytes, until: bytes | None = None) -> bytes:
    """Send ``data``; read to EOF, or only until ``until`` has arrived."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(data)
    await writer.drain()
    out = b""
    async with asyncio.timeout(10):
        while chunk := await reader.read(65536):
            out += chunk
            if until is not None and until in out:
                break
    writer.close()
    return out


def _status(reply: bytes) -> int:
    return int(reply.split(b"\r\n", 1)[0].split(b" ")[1])


def _get(target: bytes, *headers: bytes) -> bytes:
    extra = b"".join(h + b"\r\n" for h in headers)
    return (
        b"GET "
        + target
        + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + extra
        + b"Connection: close\r\n\r\n"
    )


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


async def test_double_encoded_and_unusable_paths_are_4xx_never_500_nor_the_app(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    async with running_viewer(tmp_path / "home") as (_, viewer):
        for target in (
            b"/%252e%252e%252fsecret.txt",
            b"/%252e%252e%252f%252e%252e%252f%252e%252e%252fetc%252fpasswd",
            b"/%25252e%25252e%25252fsecret.txt",
            b"/assets/%252e%252e/%252e%252e/secret.txt",
            b"/%255c..%255csecret.txt",
            b"/a%2500b",
        ):
            reply = await raw(viewer.host, viewer.port, _get(target))
            assert _status(reply) == 400, (target, reply[:200])
            assert b"path traversal" in reply and b"top secret" not in reply
        long_name = b"/" + b"%252e%252e%252f" * 40 + b"x" * 300
        assert _status(await raw(viewer.host, viewer.port, _get(long_name))) == 400
        # names longer than the file system holds: a missing asset, or the app's own page
        missing = await raw(viewer.host, viewer.port, _get(b"/assets/" + b"b" * 400 + b".js"))
        assert _status(missing) == 404 and b'"not_found"' in missing
        app_route = await raw(viewer.host, viewer.port, _get(b"/" + b"a" * 1000))
        assert _status(app_route) == 200 and b'<div id="app">' in app_route
        assert _status(await raw(viewer.host, viewer.port, _get(b"/"))) == 200


async def test_oversized_heads_and_chunked_bodies_are_refused_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    async with running_viewer(tmp_path) as (_, viewer):
        before = (tmp_path / "config.yaml").read_bytes()
        long_header = await raw(
            viewer.host, viewer.port, _get(b"/api/system", b"X-Big: " + b"a" * 20000)
        )
        assert 400 <= _status(long_header) < 500
        many = [b"X-H%d: v" % i for i in range(300)]
        too_many = await raw(viewer.host, viewer.port, _get(b"/api/system", *many))
        assert 400 <= _status(too_many) < 500
        long_line = await raw(viewer.host, viewer.port, _get(b"/api/traces?q=" + b"q" * 20000))
        assert 400 <= _status(long_line) < 500
        payload = b'{"retrieval": {"tier2_top_k": 7}, "pad": "' + b"x" * (2 * 1024 * 1024) + b'"}'
        chunks = b"".join(
            b"%x\r\n" % len(payload[i : i + 65536]) + payload[i : i + 65536] + b"\r\n"
            for i in range(0, len(payload), 65536)
        )
        chunked = await raw(
            viewer.host,
            viewer.port,
            b"PATCH /api/config HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunks + b"0\r\n\r\n",
        )
        assert _status(chunked) == 413, chunked[:200]
        assert b'"max_bytes": 1048576' in chunked
        assert (tmp_path / "config.yaml").read_bytes() == before
        assert (await call(viewer.url + "api/system")).status == 200


async def test_half_sent_heads_and_trickled_bodies_do_not_hold_a_connection(
    tmp_path: Path,
) -> None:
    async with running_viewer(tmp_path, idle_timeout_s=1.0) as (_, viewer):
        before = (tmp_path / "config.yaml").read_bytes()
        half_head = await raw(viewer.host, viewer.port, b"GET /api/system HTTP/1.1\r\nHost: 1")
        assert b"200 OK" not in half_head  # closed by the server (the read is bounded at 10 s)
        trickled = await raw(
            viewer.host,
            viewer.port,
            b"PATCH /api/config HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 40\r\n\r\n" + b'{"retrieval": ',
            until=b"}}",
        )
        assert _status(trickled) == 408, trickled[:200]
        assert b'"deadline_exceeded"' in trickled
        assert (tmp_path / "config.yaml").read_bytes() == before


async def test_bad_tokens_are_401_even_from_loopback_and_set_no_cookie(tmp_path: Path) -> None:
    async with running_viewer(tmp_path, tokens=("s3cret-token",)) as (_, viewer):
        before = (tmp_path / "config.yaml").read_bytes()
        for headers, query in (
            ({"Authorization": "Bearer nope"}, ""),
            ({"Authorization": "Bearer s3cret-tokenX"}, ""),
            ({"Cookie": "stratamem_viewer_token=nope"}, ""),
            ({}, "?token=nope"),
            ({}, "?token=s3cret"),
        ):
            got = await call(viewer.url + "api/system" + query, headers=headers)
            assert got.status == 401, (headers, query)
            assert got.json()["error"]["code"] == "unauthenticated"
            assert "set-cookie" not in got.headers
            write = await call(
                viewer.url + "api/config" + query,
                "PATCH",
                {"retrieval": {"tier2_top_k": 7}},
                headers=headers,
            )
            assert write.status == 401, (headers, query)
            stream = await raw(
                viewer.host,
                viewer.port,
                _get(
                    b"/events" + query.encode(), *(f"{k}: {v}".encode() for k, v in headers.items())
                ),
            )
            assert _status(stream) == 401 and b"text/event-stream" not in stream
        assert (tmp_path / "config.yaml").read_bytes() == before
        good = await call(viewer.url + "api/system?token=s3cret-token")
        assert good.status == 200 and "HttpOnly" in good.headers["set-cookie"]
        assert (await call(viewer.url + "api/system")).status == 200  # loopback, no token


async def test_a_non_loopback_bind_with_only_scoped_tokens_is_refused(tmp_path: Path) -> None:
    async with running_viewer(tmp_path) as (core, _):
        viewer = ViewerServer(core, tokens={"beta-only": ("beta/pb",)})
        with pytest.raises(StratamemError) as err:
            await viewer.start("0.0.0.0", 0)
        assert err.value.code.value == "permission_denied"


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
        assert _status(malformed) == 400
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
