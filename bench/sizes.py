"""What each ``--size`` runs: small for CI (a few minutes on 2 shared cores), standard for the
issue's 10k/100k figures, full adds 1M traces."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Size:
    scale_rows: tuple[int, ...]
    queries: int
    warmup: int
    capture_paced: int
    capture_burst: int
    grpc_rows: int
    grpc_calls: int
    soak_turns: int
    soak_every: int
    personas: int
    sessions_per_persona: int
    questions_per_kind: int
    #: LoCoMo: conversations (0 = all) and questions per category and conversation (0 = all)
    locomo_convs: int = 0
    locomo_questions: int = 0


SIZES = {
    "small": Size((10, 1_000, 10_000), 23, 3, 60, 300, 2_000, 100, 1_000, 250, 3, 12, 2, 1, 3),
    "standard": Size(
        (10, 1_000, 10_000, 100_000), 43, 3, 150, 1_000, 10_000, 400, 10_000, 1_000, 6, 40, 4
    ),
    "full": Size(
        (10, 1_000, 10_000, 100_000, 1_000_000),
        43,
        3,
        150,
        1_000,
        10_000,
        300,
        10_000,
        1_000,
        6,
        40,
        4,
    ),
}
#: sizes at and above this also get the ANN phase (forced below the production threshold)
ANN_PHASE_MIN_ROWS = 10_000
#: sizes at and above this measure the served path only (the hot index and its baselines: exact
#: numpy, LanceDB flat): no seed-design copy, no LanceDB IVF phase, no footprint processes — each
#: would hold another copy of 1M vectors on a 2-core, 24 GB machine shared with others
SERVED_ONLY_MIN_ROWS = 1_000_000
SECTIONS = (
    "scaling",
    "dense_sample",
    "capture",
    "grpc",
    "soak",
    "quality",
    "locomo",
    "startup",
    "episodes",
)
#: traces in the ``dense_sample`` section (the LanceDB path's dense-query sample, cached or not)
DENSE_SAMPLE_ROWS = 10_000
