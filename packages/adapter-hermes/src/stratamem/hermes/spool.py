"""A durable hand-off for turns captured while the core is not open yet (first model load, busy home).

``sync_turn`` must be durable on return but never outlive Hermes' 5 s drain; a turn that cannot reach
the core in time is written here (one fsynced file per turn) and replayed as soon as a core opens.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from stratamem.contract.codec import from_bytes, to_bytes
from stratamem.contract.dtos import TurnInput, TurnResult

log = logging.getLogger("stratamem.hermes")


class Spool:
    def __init__(self, home: Path) -> None:
        self.dir = home / "spool" / "hermes"
        self._lock = threading.Lock()

    def put(self, turn: TurnInput, result: TurnResult) -> Path:
        """Write one turn durably (fsync of file and directory) and return its path."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        record = {
            "turn": base64.b64encode(to_bytes(turn)).decode("ascii"),
            "result": base64.b64encode(to_bytes(result)).decode("ascii"),
        }
        name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.turn"
        tmp = self.dir / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(record))
            fh.flush()
            os.fsync(fh.fileno())
        final = self.dir / name
        os.replace(tmp, final)
        dfd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return final

    def pending(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(self.dir.glob("*.turn"))

    def backlog(self) -> int:
        """Turns not yet applied, including those a replay is applying right now."""
        if not self.dir.is_dir():
            return 0
        return sum(
            1 for p in self.dir.iterdir() if ".turn" in p.name and not p.name.startswith(".")
        )

    def replay(self, core: Any) -> int:
        """Apply spooled turns in order (``turn_start`` for routing, then ``turn_end``); returns count."""
        done = 0
        with self._lock:
            for path in self.pending():
                claimed = path.with_name(path.name + f".claimed-{os.getpid()}")
                try:
                    os.replace(path, claimed)  # another process may be replaying the same spool
                except FileNotFoundError:
                    continue
                try:
                    record = json.loads(claimed.read_text(encoding="utf-8"))
                    turn = from_bytes(TurnInput, base64.b64decode(record["turn"]))
                    result = from_bytes(TurnResult, base64.b64decode(record["result"]))
                    if not result.episode_id:
                        routed = core.turn_start(turn)
                        result = replace(result, episode_id=routed.query.episode_id)
                    core.turn_end(result)
                except Exception as exc:
                    log.warning("stratamem: spooled turn %s kept for later: %s", path.name, exc)
                    with contextlib.suppress(OSError):
                        os.replace(claimed, path)
                    break
                claimed.unlink(missing_ok=True)
                done += 1
        if done:
            log.info("stratamem: replayed %d spooled turn(s)", done)
        return done
