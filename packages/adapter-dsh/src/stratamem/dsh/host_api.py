"""DSH's event and field names (DSH ``>=0.1.0-rc.5 <0.2.0``), kept in one module because the API moves.

The JS side mirrors this table in ``js/host-api.mjs``; newer DSH renames ``agent/pre-step``.
"""

from __future__ import annotations

#: the Cordis plugin name and the recall message source
PLUGIN_NAME = "stratamem"
AGENT = "dsh"
RECALL_SOURCE = {"kind": "plugin", "plugin": PLUGIN_NAME, "form": "recall"}
PROMPT_SECTION = f"tool:{PLUGIN_NAME}"
PROMPT_SECTION_ORDER = 114

# host events
PRE_STEP = "agent/pre-step"
SESSION_EVENT = "session/event"
SESSION_DISPOSED = "session/disposed"

# session event types read from a turn
TURN_START = "turn/start"
TURN_END = "turn/end"
USER_MESSAGE = "user/message"
ASSISTANT_MESSAGE = "assistant/message"
TOOL_CALL = "tool/call"
TOOL_RESULT = "tool/result"

USER_SOURCE = "user"
DEFAULT_TOOL_ERROR = "TOOL_ERROR"
