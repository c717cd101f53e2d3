"""Route Stratamem's structlog output through Hermes' stdlib logging (into ``logs/agent.log``).

Hermes swaps ``sys.stdout``/``sys.stderr`` for wrappers that cannot be weak-referenced, which
structlog's default ``PrintLogger`` needs; inside Hermes the host's logging is the right sink anyway.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()


def use_host_logging() -> None:
    """Configure structlog once, unless the core (or the user) already did."""
    import structlog

    with _lock:
        if structlog.is_configured():
            return
        structlog.configure(
            processors=[
                structlog.contextvars.merge_contextvars,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso"),
                structlog.processors.JSONRenderer(),
            ],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.make_filtering_bound_logger(20),
            cache_logger_on_first_use=True,
        )
