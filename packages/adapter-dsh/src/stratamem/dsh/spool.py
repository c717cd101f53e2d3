"""Where DSH's turns are spooled: the plugin writes each completed turn there from its synchronous
``turn/end`` listener (``js/spool.mjs``, the host kit's format), the service consumes them."""

from __future__ import annotations

from pathlib import Path

from stratamem.contract.hostkit.spool import Spool


def spool_dir(home: Path) -> Path:
    return Path(home) / "dsh" / "spool"


def open_spool(home: Path) -> Spool:
    return Spool(spool_dir(home))
