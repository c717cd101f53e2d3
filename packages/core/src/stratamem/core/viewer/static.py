"""The built web app (package data under ``static/``): safe path resolution and content types.

Any path that is not a file inside the static directory falls back to ``index.html`` for app routes
and is ``not_found`` for asset-looking paths; ``..`` never leaves the directory, however many times it
was percent-encoded, and a name the file system cannot hold is simply not there.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from urllib.parse import unquote

from aiohttp import web

from stratamem.contract.errors import ErrorCode
from stratamem.core.viewer.http import HttpError

STATIC_DIR = Path(__file__).parent / "static"
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".ico": "image/x-icon",
    ".png": "image/png",
}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)


MAX_DECODES = 4


def _unsafe(path: str) -> bool:
    return ".." in path.split("/") or "\x00" in path or "\\" in path


def is_traversal(path: str) -> bool:
    """``..``, NUL or a backslash in ``path`` or in any further percent-decoding of it."""
    for _ in range(MAX_DECODES):
        if _unsafe(path):
            return True
        decoded = unquote(path)
        if decoded == path:
            return False
        path = decoded
    return True  # still encoded after that many rounds: nobody names an asset like that


def resolve(path: str, root: Path = STATIC_DIR) -> Path | None:
    """The file under ``root`` for URL ``path`` (already percent-decoded), or None."""
    if _unsafe(path):
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    try:
        candidate = (root.joinpath(*parts) if parts else root / "index.html").resolve()
        base = root.resolve()
        if base not in candidate.parents and candidate != base:
            return None
        return candidate if candidate.is_file() else None
    except (OSError, ValueError):  # a name too long for the file system, or otherwise unusable
        return None


def serve(path: str, root: Path = STATIC_DIR) -> web.Response:
    if is_traversal(path):
        raise HttpError(
            400, ErrorCode.INVALID_ARGUMENT, "path traversal is not allowed", {"path": path}
        )
    target = resolve(path, root)
    if target is None:
        last = path.rsplit("/", 1)[-1]
        if "." in last:  # an asset that does not exist
            raise HttpError(404, ErrorCode.NOT_FOUND, f"no file {path!r}", {"path": path})
        target = resolve("/index.html", root)
        if target is None:
            raise HttpError(
                404,
                ErrorCode.NOT_FOUND,
                "the viewer app is not built (packages/core/viewer-app: npm run build)",
            )
    ctype = _TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
    headers = {"Content-Security-Policy": CSP, "X-Frame-Options": "DENY"}
    if "/assets/" in path:
        headers["Cache-Control"] = "public, max-age=31536000, immutable"
    headers["Content-Type"] = ctype or "application/octet-stream"
    return web.Response(body=target.read_bytes(), headers=headers)
