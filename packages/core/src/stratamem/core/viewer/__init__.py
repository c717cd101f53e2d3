"""The viewer: an HTTP + SSE surface and a built web app served by ``stratamem serve`` over its core.

Loopback by default on the host's port; ``stratamem open`` prints the running viewer's URL.
"""

from stratamem.core.viewer.server import ViewerServer

__all__ = ["ViewerServer"]
