"""Capture (L1): turn a finished turn into trace rows ready for the store (memos-core §5.2).

Stable interface (called by ``LocalCore`` / the journal writer):

* ``extract_steps(turns: Sequence[EpisodeTurn]) -> list[Step]`` — pure step extraction: one step per
  user segment, or one sub-step per tool call plus a response step; ``turn_id`` = first user ts.
* ``build_trace_drafts(user_text, result: TurnResult, *, lightweight, config, user_ts=None,
  prior_turns=()) -> list[TraceDraft]`` — normalised, summarised, tagged drafts carrying every
  non-vector column of the ``traces`` table plus ``summary_text_to_embed`` / ``action_text_to_embed``
  (the caller embeds them; ``action_text_to_embed`` is ``None`` in lightweight mode).
* ``capture_turn(draft, config) -> list[row]`` — the facade hook (rows carry ``_embed`` texts).
* Helpers reused by retrieval: ``extract_tags``, ``error_signatures``, ``truncate_middle``,
  ``heuristic_summary``.
"""

from stratamem.core.capture.drafts import TraceDraft, build_trace_drafts
from stratamem.core.capture.normalise import truncate_middle
from stratamem.core.capture.rows import capture_turn
from stratamem.core.capture.signatures import error_signatures
from stratamem.core.capture.steps import EpisodeTurn, Step, extract_steps
from stratamem.core.capture.summary import heuristic_summary, summarise
from stratamem.core.capture.tags import KEYWORDS, extract_tags, keyword_tags

__all__ = [
    "KEYWORDS",
    "EpisodeTurn",
    "Step",
    "TraceDraft",
    "build_trace_drafts",
    "capture_turn",
    "error_signatures",
    "extract_steps",
    "extract_tags",
    "heuristic_summary",
    "keyword_tags",
    "summarise",
    "truncate_middle",
]
