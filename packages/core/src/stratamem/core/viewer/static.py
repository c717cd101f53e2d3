"""The built web app (package data under ``static/``): safe path resolution and content types.

Any path that is not a file inside the static directory falls back to ``index.html`` for app routes
and is ``not_found`` for asset-looking paths; ``..`` never leaves the directory.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from stratamem.contract.errors import ErrorCode
from stratamem.core.viewer.http import HttpError, Response

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


def resolve(path: str, root: Path = STATIC_DIR) -> Path | None:
    """The file under ``root`` for URL ``path`` (already percent-decoded), or None."""
    if "\x00" in path or "\\" in path:
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None
    candidate = (root.joinpath(*parts) if parts else root / "index.html").resolve()
    base = root.resolve()
    if base not in candidate.parents and candidate != base:
        return None
    return candidate if candidate.is_file() else None


def serve(path: str, root: Path = STATIC_DIR) -> Response:
    if ".." in path.split("/") or "\x00" in path or "\\" in path:
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
    return Response(200, target.read_bytes(), ctype or "application/octet-stream", headers)
