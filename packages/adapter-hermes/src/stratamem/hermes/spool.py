"""Hermes' use of the host kit's durable spool: turns ``sync_turn`` acknowledged while the core was
not open yet (first model load, busy home).

``sync_turn`` must be durable on return but never outlive Hermes' 5 s drain; a turn that cannot reach
the core in time is spooled (the routing input and the result, as contract messages) and replayed as
soon as a core opens: ``turn_start`` for routing when it has no episode yet, then ``turn_end``.
"""

from __future__ import annotations

import base64
import logging
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from stratamem.contract.codec import from_bytes, to_bytes
from stratamem.contract.dtos import TurnInput, TurnResult
from stratamem.contract.hostkit import spool as kit

log = logging.getLogger("stratamem.hermes")


def _b64(message: Any) -> str:
    return base64.b64encode(to_bytes(message)).decode("ascii")


class Spool(kit.Spool):
    def __init__(self, home: Path) -> None:
        super().__init__(home / "spool" / "hermes")

    def put_turn(self, turn: TurnInput, result: TurnResult) -> Path:
        """Write one turn durably (keyed by its turn key) and return its path."""
        key = result.turn_key or turn.turn_key or f"{turn.session_id}:{uuid.uuid4().hex}"
        return self.put({"key": key, "turn": _b64(turn), "result": _b64(result)})

    def replay(self, core: Any) -> int:
        """Apply spooled turns in order on a blocking core; returns how many were applied."""
        done = 0
        records = self.claim()
        for i, rec in enumerate(records):
            try:
                turn = from_bytes(TurnInput, base64.b64decode(rec.data["turn"]))
                result = from_bytes(TurnResult, base64.b64decode(rec.data["result"]))
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("stratamem: spooled turn %s is unreadable: %s", rec.key, exc)
                self.set_aside(rec)
                continue
            try:
                if not result.episode_id:
                    routed = core.turn_start(turn)
                    result = replace(result, episode_id=routed.query.episode_id)
                core.turn_end(result)
            except Exception as exc:
                log.warning("stratamem: spooled turn %s kept for later: %s", rec.key, exc)
                for later in records[i:]:
                    self.release(later)
                break
            self.consumed(rec)
            done += 1
        if done:
            log.info("stratamem: replayed %d spooled turn(s)", done)
        return done
