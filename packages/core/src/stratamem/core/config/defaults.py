"""The one defaults table of the core: every config key and its effective default value.

Keys are the snake_case form of reference/memos-core.md §6.2 (effective column), plus Stratamem's own
sections (storage, server, workspace, journal). ``config.yaml`` in the home is deep-merged over this.
"""

from __future__ import annotations

import copy
from typing import Any

DEFAULTS: dict[str, Any] = {
    "version": 1,
    "viewer": {"port": 18799, "bind_host": "127.0.0.1", "open_on_first_turn": False},
    "embedding": {
        "provider": "local",
        "model": "all-MiniLM-L6-v2",
        "endpoint": "",
        "api_key": "",
        "timeout_ms": 30000,
        "max_retries": 3,
        "batch_size": 32,
        #: intra-op threads of the local ONNX session (queries and the writer's batches share it).
        #: One: on 2 shared cores a second thread lifts burst capture to searchable 73-78 -> 107-111
        #: turns/s but takes the core the acks need (burst ack p95 1.9-3.5 -> 6.2-6.9 ms;
        #: bench/results/capture-threads-session21.md)
        "threads": 1,
        #: a helper thread below foreground priority, with its own one-thread session of the local
        #: model, shares every embedding call of more than 16 texts (the capture writer's batches)
        #: with its caller, which never waits for it longer than a piece of its own takes
        #: (embedding/background.py). Linux only; where the OS refuses the nice there is no helper
        #: (a log line says so). Off: on 2 shared cores it lifted burst capture 1.0-1.9x but the
        #: burst's ack p95 to 6.2-6.5 ms (main 3.1-4.3), and costs ~+95 MB RSS
        #: (bench/results/capture-nice-session22.md)
        "background_helper": False,
        #: how far the helper runs below the process (a nice increment; the acks and recall
        #: pre-empt it)
        "background_nice": 10,
        #: an LRU of recent texts' vectors: a query asked again, a turn re-sent, a learner
        #: re-reading texts it just captured. Stored rows keep their own vectors, so a larger
        #: cache only holds copies: 2,048 (~3.5 MB) covers a conversation's turns and questions
        #: (LoCoMo: <= 700 turns + 260 questions) and is full ~2k turns into the soak (20k was
        #: +18 MB per 10k turns, still filling at 10k)
        "cache": {"enabled": True, "max_items": 2048},
    },
    "llm": {
        "provider": "",
        "endpoint": "",
        "model": "",
        "api_key": "",
        "temperature": 0.0,
        "fallback_to_host": True,
        "timeout_ms": 45000,
        "max_retries": 3,
        #: after a terminal refusal (bad key, unknown model) the provider is not called for this long
        "breaker_cooldown_s": 300.0,
    },
    "l3_llm": {
        "provider": "",
        "endpoint": "",
        "model": "",
        "api_key": "",
        "temperature": 0.0,
        "timeout_ms": 60000,
    },
    "skill_evolver": {
        "provider": "",
        "endpoint": "",
        "model": "",
        "api_key": "",
        "temperature": 0.0,
        "timeout_ms": 60000,
    },
    #: the namespace of a call that names none (reads, health); never another caller's
    "namespace": {"agent_kind": "unknown", "profile_id": "default"},
    "algorithm": {"lightweight_memory": {"enabled": True}},
    "capture": {
        "max_text_chars": 4000,
        "max_tool_output_chars": 2000,
        "embed_traces": True,
        "alpha_scoring": True,
        "synth_reflections": True,
        "llm_concurrency": 4,
        "max_reflect_llm_calls": 128,
        "max_recovery_orphan_inserts": 0,
        "batch_mode": "auto",
        "batch_threshold": 12,
        "reflection_context_mode": "task_downstream",
        "long_episode_reflect_mode": "per_step_downstream",
        "downstream_step_count": 3,
        "task_context_max_chars": 800,
        "downstream_context_max_chars": 1200,
        "downstream_per_step_max_chars": 400,
        "synth_outcome_max_chars": 600,
        "summary_max_chars": 140,
        #: Stratamem: hard cap on one user text accepted by turn_start/turn_end (bad input beyond).
        "max_input_chars": 200000,
    },
    "reward": {
        "gamma": 0.9,
        "tau_softmax": 0.5,
        "decay_half_life_days": 30,
        "llm_scoring": True,
        "implicit_threshold": 0.2,
        "feedback_window_sec": 30,
        "summary_max_chars": 2000,
        "llm_concurrency": 2,
        "min_exchanges_for_completion": 1,
        "min_content_chars_for_completion": 40,
        "tool_heavy_ratio": 0.7,
        "min_assistant_chars_for_tool_heavy": 80,
    },
    "l2_induction": {
        "min_similarity": 0.65,
        "candidate_ttl_days": 30,
        "min_episodes_for_induction": 1,
        "min_trace_value": 0.005,
        "use_llm": True,
        "trace_char_cap": 3000,
        "gain_ema_alpha": 0.4,
        "archive_gain": -0.05,
        #: Stratamem: named constants of §5.4 (association/duplicate top-k, signature bonus, scopes)
        "association_top_k": 16,
        "duplicate_top_k": 5,
        "signature_bonus": 0.05,
        "gain_scope_per_episode": 50,
        "gain_set_cap": 50,
        "gain_pseudo_count": 5,
        "dice_title": 0.9,
        "dice_trigger": 0.8,
        "dice_procedure": 0.7,
    },
    "l3_abstraction": {
        "min_policies": 1,
        "min_policy_gain": 0.02,
        "min_policy_support": 1,
        "cluster_min_similarity": 0.3,
        "policy_char_cap": 800,
        "trace_char_cap": 500,
        "trace_evidence_per_policy": 1,
        "use_llm": True,
        "cooldown_days": 0,
        "confidence_delta": 0.05,
        "min_confidence_for_retrieval": 0.2,
        #: Stratamem: named constants of §5.5 (merge by policy overlap, loose-cluster confidence)
        "merge_policy_overlap": 0.6,
        "loose_confidence_base": 0.6,
    },
    "skill": {
        "min_support": 1,
        "min_gain": 0.02,
        "candidate_trials": 1,
        "cooldown_ms": 0,
        "trace_char_cap": 500,
        "evidence_limit": 6,
        "use_llm": True,
        "eta_delta": 0.1,
        "archive_eta": 0.1,
        "min_eta_for_retrieval": 0.1,
        #: Stratamem: named constants of §5.6 (evidence, verifier, trial outcome thresholds)
        "evidence_per_episode": 20,
        "evidence_cos_weight": 0.2,
        "counter_examples": 5,
        "verify_min_tool_coverage": 0.5,
        "verify_min_resonance": 0.5,
        "trial_pass_reward": 0.5,
        "trial_fail_reward": -0.5,
    },
    "feedback": {
        "failure_threshold": 3,
        "failure_window": 5,
        "value_delta": 0.5,
        "min_low_value_threshold": 0.01,
        "use_llm": True,
        "attach_to_policy": True,
        "cooldown_ms": 60000,
        "trace_char_cap": 500,
        "evidence_limit": 4,
        #: Stratamem: named constants of §5.8/§5.9
        "repair_evidence_traces": 24,
        "experience_min_significance": 0.5,
        "experience_merge_similarity": 0.72,
        "experience_merge_similarity_cross_type": 0.82,
        #: a new user turn counts as implicit feedback on the previous turn at this confidence
        "implicit_min_confidence": 0.7,
        "implicit_magnitude": 0.6,
    },
    "learning": {
        #: malformed-JSON retries of every learning-stage LLM call (then the deterministic fallback)
        "json_retries": 1,
        "llm_timeout_ms": 30000,
        #: an episode scored with no signal at all (no LLM, no feedback) keeps its traces' priority
        #: instead of zeroing it (memos-core §9 defect not copied)
        "keep_priority_without_signal": True,
        #: α of a step with no reflection when the reward is back-propagated (reference: 0)
        "default_alpha": 0.0,
        #: memos-core §5.10: periodic scan for closed episodes whose reward is missing or stale
        #: (0 disables the periodic scan; start-up recovery and manual paths still run)
        "rescore_interval_s": 600.0,
        "rescore_dedupe_s": 30.0,
        "rescore_page_size": 500,
        #: an episode closed this recently may still be inside its feedback window: not rescored
        "rescore_min_age_s": 120.0,
        "rescore_backoff_after": 3,
        "rescore_backoff_base_s": 3600.0,
        "rescore_backoff_max_s": 86400.0,
    },
    "session": {
        "follow_up_mode": "merge_follow_ups",
        "merge_max_gap_ms": 7_200_000,
        "max_turns_per_episode": 30,
        "classify_timeout_ms": 5000,
        "bg_llm_concurrency": 2,
        "auto_recovery": True,
    },
    "retrieval": {
        "tier1_top_k": 3,
        "tier2_top_k": 5,
        "tier3_top_k": 2,
        "candidate_pool_factor": 4,
        "weight_cosine": 0.6,
        "weight_priority": 0.4,
        "mmr_lambda": 0.7,
        "include_low_value": False,
        "rrf_constant": 60,
        "min_skill_eta": 0.1,
        "min_trace_sim": 0.25,
        "episode_goal_min_sim": 0.45,
        "tag_filter": "auto",
        "keyword_top_k": 20,
        #: Stratamem: the trace tier's BM25 candidates are kept down to this share of the best
        #: one's score (memos-core 5.7.3 floors at 0.2). One memory matching a rare word of the
        #: query pushed the others matching its common words under 0.2 and out of the pool, so
        #: a set's second member never reached fusion (bench/results/locomo.md, session 23)
        "trace_lexical_floor": 0.1,
        "relative_threshold_floor": 0.2,
        "skill_eta_blend": 0.15,
        "smart_seed": True,
        "smart_seed_ratio": 0.7,
        "multi_channel_bypass": True,
        "skill_injection_mode": "summary",
        "skill_summary_chars": 200,
        "llm_filter_enabled": True,
        "llm_filter_max_keep": 4,
        "llm_filter_min_candidates": 2,
        "llm_filter_candidate_body_chars": 500,
        "vector_scan_max_age_ms": 0,
        #: Stratamem: upper bound of a per-tier top-k override (larger is bad input).
        "max_top_k": 100,
        #: Stratamem: default turn_start budget when the caller gives no deadline.
        "default_deadline_ms": 8000,
        #: Stratamem: how tier 2 fuses its channels: "calibrated" (weighted scaled scores, lifted by
        #: session neighbours; retrieval/fusion.py, expand.py) or "rrf" (rank fusion)
        "trace_fusion": "calibrated",
        #: share of the lexical (BM25) side in the calibrated score; the rest is the scaled cosine
        "fusion_lexical_weight": 0.5,
        #: the lexical side's score (BM25 over the pool's best, in [0, 1]) is raised to this power
        #: before weighing: a memory far ahead of the other lexical matches keeps its lead, a weak
        #: partial match counts for little (retrieval/fusion.py)
        "fusion_lexical_power": 1.5,
        #: a trace gains this times its best session neighbour's score (0 turns expansion off)
        "neighbour_weight": 0.5,
        #: how many of the best traces fetch their session neighbours
        "neighbour_expand_top": 10,
        #: a trace told inside the time window the query names ("in May 2023", "last week") gains this
        "time_window_weight": 0.5,
        #: tier 2 injects nothing unless a candidate reaches this cosine to the query, or holds
        #: ``relevance_floor_coverage`` of the query's idf weight, or an exact identifier
        #: (retrieval/floor.py; -1 turns the floor off)
        "relevance_floor_cosine": -1.0,
        "relevance_floor_coverage": 0.6,
        #: Stratamem: tier 2 scales its vector pool (top_k × candidate_pool_factor) and its BM25
        #: pool (keyword_top_k) by this (a wider pool costs ~nothing on the hot index; LoCoMo hit@10
        #: 0.879 -> 0.882, long-memory set unchanged)
        "trace_pool_scale": 2.0,
        #: Stratamem: with an LLM configured, restate the query as up to 3 search queries before
        #: recall (retrieval/llm_rewrite.py); off by default: one more LLM round trip per recall
        "llm_query_rewrite": False,
        #: Stratamem: the per-call caps on the rewrite's and the relevance filter's LLM time (the
        #: filter's is memos-core's 2000 ms); a local model on a CPU needs more: a 0.5B one took
        #: seconds per call on 2 cores (bench/results/locomo.md, session 5)
        "llm_query_rewrite_timeout_ms": 1500,
        "llm_filter_timeout_ms": 2000,
        #: a query about the present ("… now?", "my current …") lifts the newest of the best traces
        #: by this, the oldest by nothing (retrieval/temporal.py; 0 turns it off)
        "present_recency_weight": 0.6,
        #: the query is embedded without the words at least this share of the stored memories
        #: holds (a speaker's name in every memory of a conversation); BM25 already gives them
        #: ~no weight (retrieval/dense_query.py: counted on the hot index, else over a sample of the
        #: caller's memories on the LanceDB path; 0 turns it off)
        "dense_common_word_share": 0.8,
        #: widen the BM25 query with the home's own words near the query's words (vocab/: a word
        #: store per home filled by the capture writer; bench/results/locomo.md, sessions 6, 8, 9):
        #: LoCoMo multi-hop R@10 0.268 -> 0.303, the long-memory set unchanged in R@10 (0.914)
        "expand_vocab": True,
        #: m: the nearest words kept per word (changing it rebuilds the store's lists at load)
        "expand_vocab_neighbours": 8,
        #: τ: an added word's cosine with the query word it neighbours
        "expand_vocab_min_cosine": 0.5,
        #: θ: an added word's cosine with the whole query's vector (keeps neighbours of a broad
        #: word that have nothing to do with the question out: 0.30 let "going" and "departure"
        #: in for "Which places have I travelled to…", session 9)
        "expand_vocab_min_query_cosine": 0.35,
        #: γ: an added word's BM25 weight is this × its cosine with the query word
        "expand_vocab_weight": 0.5,
        #: s: only words held by at most this share of the memories the caller may see are added
        #: (rare, informative; 0.02 let "flights", 3 of a persona's 272 memories, in, session 9)
        "expand_vocab_max_share": 0.01,
        #: a trace's MMR pick gain falls by this per trace of its session already chosen (0: off);
        #: it decides which traces make the list, not their order. Applied to every query it cost
        #: LoCoMo hit@10 (0.889 -> 0.882, the confirm half 0.870, session 10); gated on the
        #: query's shape (below) at 0.06: multi-hop R@10 0.303 -> 0.338 (tune 25 -> 27 of 74,
        #: confirm 18 -> 21 of 68), R@10 0.780 -> 0.784, hit@10 0.889 -> 0.888, MRR@10 0.617 =
        #: 0.617, the long-memory set's R@10 0.914 -> 0.919 (bench/results/locomo.md, session 11)
        "session_diversity": 0.06,
        #: the first this many chosen traces of a session do not count for ``session_diversity``
        "session_diversity_free": 0,
        #: which queries ``session_diversity`` spreads: "set_query" only those whose English shape
        #: asks for a set ("What books has…", "How many times…", "Did Ann and Bob ever…";
        #: retrieval/query_shape.py: 64 % of LoCoMo's multi-hop questions, 10 % of its
        #: single-hop ones), "always" every query
        "session_diversity_gate": "set_query",
        #: κ: in the final pick a memory gains this × the weight of the query's aspects it holds
        #: that no memory picked before it holds (its BM25 tokens and each word the expansion
        #: added, weighted by idf; retrieval/coverage.py): a set's second member ("spain") beats
        #: the first one's second turn ("england" again). 0: off. It picks the list, not its
        #: order. LoCoMo kept homes, κ 0.8: multi-hop 0.303 -> 0.310 (tune only); with
        #: ``session_diversity`` 0.06 gated, confirm +1 and tune ±0; the long-memory set's 5-slot
        #: R@5 0.843 -> 0.831: off (bench/results/locomo.md, session 11 mh2)
        "aspect_coverage": 0.0,
        #: an aspect of the query's own words weighs this, one the expansion added its BM25 weight
        #: (γ × cosine), before idf
        "aspect_coverage_own": 1.0,
        #: only the this many most relevant candidates gain from coverage
        "aspect_coverage_top": 30,
        #: a covered aspect keeps this share of its weight (0: xQuAD's covered; PM2-like above)
        "aspect_coverage_decay": 0.0,
        #: which queries ``aspect_coverage`` applies to: "set_query" only those whose English
        #: shape asks for a set (the classifier of ``session_diversity_gate``): their members
        #: each hold another aspect, a pointed query wants its best match; "always" every query.
        #: Gated, κ 1.0 with ``session_diversity`` 0.1 (chosen on LoCoMo's tune half): multi-hop
        #: 0.338 -> 0.345, `turn_start` R@10 -2 questions, long-memory set unchanged: κ stays 0
        #: (bench/results/locomo.md, session 12 mh3)
        "aspect_coverage_gate": "set_query",
    },
    "storage": {
        #: build an ANN index (IVF_HNSW_SQ, cosine) once a table holds this many rows
        "ann_threshold_rows": 50000,
        "ann_nprobes": 20,
        "ann_ef": 100,
        "ann_refine_factor": 5,
        #: serve recall from the in-memory mirror of the tables (hotindex/); LanceDB stays the
        #: store of record
        "hot_index": True,
        #: memory budget of the mirror, MB (0 = none). Above it the namespaces used least recently
        #: are dropped from memory and served from LanceDB (same results), reloaded when used again
        #: (hotindex/residency.py). ~2.5 KB per trace with int8 vectors, ~3.4 with the HNSW
        #: graph above hot_ann_threshold_rows (hot-int8.md): 1024 MB holds ~300k
        "hot_index_max_mb": 1024,
        #: the mirror's vectors: "i4" (4-bit codes + a scale per row in memory, 0.20 KB per 384-d
        #: vector, scanned by a SIMD int4 kernel; the best 4 × limit rescored from a side file
        #: holding int8 codes + int4 residual + scale, 0.58 KB: recall@10 vs exact float32 as
        #: "i8"'s, 0.998-0.999 at 10k-100k on the bench corpus), "i8" (int8 codes + scale in
        #: memory, 0.39 KB, the residual in the side file) or "f32" (1.54 KB);
        #: hotindex/quantized.py, bench/results/hot-int4.md, hot-int8.md
        "hot_vector_dtype": "i4",
        #: above this many vectors in a column the mirror adds an HNSW graph (usearch, int8).
        #: bench/hot_int8.py at load 6-9: the int8 scan 1.1 ms at 20k (float32 1.5), 6.6 at 50k,
        #: 8.5 at 100k; the graph 0.6 / 1.1 / 1.8 ms (idle, the int8 scan at 100k is ~2 ms). 30k
        #: keeps the scan's worst case at the float32 scan's at the old 20k threshold; the graph
        #: adds ~0.85-1.0 KB per vector and 10-30 s of build at 50k-100k
        "hot_ann_threshold_rows": 30000,
        "hot_ann_connectivity": 16,
        #: links per node of a graph built over this many vectors or more (a large table's load):
        #: 16 left recall@10 vs exact at 0.976-0.979 at 1M whatever the breadth; 32 read 0.983 at
        #: the same build CPU (314 vs 319 s), +1.5 ms p50, +0.56 KB per vector (1.69 vs 1.13 KB)
        "hot_ann_dense_connectivity": 32,
        "hot_ann_dense_from_rows": 500000,
        "hot_ann_expansion_add": 64,
        #: graph search breadth up to hot_ann_expansion_ref_rows vectors (candidates are rescored
        #: exactly), then this much again per doubling past it (hotindex/ann.py; 320 at 100k, 574
        #: at 300k, 852 at 1M). Recall@10 vs exact on the bench corpus: 160 read 0.973-0.983 at
        #: 100k (three graphs) and 0.976 at 300k; 320 read 0.982 at 100k, 384-512 0.982 at 300k
        "hot_ann_expansion_search": 160,
        "hot_ann_expansion_ref_rows": 50000,
        "hot_ann_dtype": "i8",
        #: threads inserting a batch into the graph. One: the same rows make the same graph, so
        #: two processes over one home rank alike; two linked nodes in the threads' timing, and
        #: at 100k two processes' vector channels differed on ~25 of 60 questions (one final
        #: ranking). A 100k build took about as long with one at load 6-13 (determinism-session12.md)
        "hot_ann_threads": 1,
        #: the graph (int8 distances) proposes limit×oversample/share candidates, rescored exactly
        #: in float32; 2 lost near-ties of clustered vectors (recall@10 0.97 at 100k), 4 keeps >= 0.98
        "hot_ann_oversample": 4,
        #: a filtered ANN query over-fetching more than this scans exactly instead
        "hot_ann_max_fetch": 2000,
        #: BLAS threads of the serving process (hotindex/blas.py: one is faster on shared cores);
        #: 0 leaves the library's own setting
        "hot_blas_threads": 1,
        "optimize_interval_s": 300,
        "optimize_after_rows": 500,
        #: table versions older than this are deleted at each optimize. Each compaction rewrites the
        #: small fragments, so disk holds one copy of the data per compaction inside this window:
        #: 300 s kept ~7x the data at the soak's write rate, 60 s ~2x (bench/soak.py)
        "cleanup_older_than_s": 60,
        "sqlite_busy_timeout_ms": 5000,
        #: LanceDB's index and metadata caches (its defaults grow with every table version: RSS
        #: climbed ~85 MB per 1,000 turns in the soak; these bound it). The index cache holds the
        #: FTS and ANN index pieces reads use (full at 64 MB serving 100k traces from LanceDB).
        #: The metadata cache fills with each commit's table-version metadata (~0.1 MB a commit)
        #: until the next optimize renews the session: at 32 MB the soak's RSS swung by up to
        #: ~24 MB between samples; at 8 it holds 1.7-7.7 MB there, LanceDB-path reads at 100k and
        #: capture no slower; at 2 the capture writer fell behind (bench/results/soak-session12.md)
        "lance_index_cache_mb": 64,
        "lance_metadata_cache_mb": 8,
        #: every this many optimize rounds, reopen the tables on a fresh LanceDB session (0 =
        #: never): the caches keep entries of every table version, weighed at about half what
        #: they hold, so RSS grew ~2.5 MB per 1,000 versions beyond the bounds above
        #: (storage/lance.py ``renew_session``; bench/soak.py)
        "lance_session_renew_every": 1,
        #: Arrow's default memory pool in the engine's process: ``system`` (malloc), ``jemalloc``,
        #: ``mimalloc`` (the wheels' default, which kept every write batch's pages: +~25 MB RSS per
        #: 1,000 turns in the soak) or ``default`` (leave it); see storage/allocator.py
        "arrow_memory_pool": "system",
        #: cap on glibc malloc arenas (0 = glibc's 8 per core; each runtime thread grew its own)
        "malloc_arena_max": 2,
        #: glibc allocations of this size and more get their own mapping, returned on free (0 =
        #: glibc's dynamic threshold, under which the soak's arenas fragmented: +37 MB per 10k
        #: turns). Each such allocation pays page faults: 64 KB made a 100k-slot numpy score pass 3x
        #: slower; at 1 MB the hot path's arrays stay below it up to ~250k traces
        "malloc_mmap_threshold_kb": 1024,
        #: return free malloc pages to the OS this often and after every optimize (glibc
        #: ``malloc_trim``; 0 = never)
        "malloc_trim_interval_s": 30,
    },
    "journal": {
        #: how long the background writer batches journal entries before applying them. It
        #: commits whatever is pending (one LanceDB commit a batch: ~2,400-2,900 per 10k soak
        #: turns); a commit per turn added only ~0.5 MB RSS per 1,000 commits, and a linger for
        #: fuller batches delayed paced applies by 150-250 ms under load, so it does not linger
        #: (bench/results/soak-session14-lance.md)
        "apply_batch_max": 64,
        "apply_idle_ms": 20,
        #: an entry that fails is retried alone, backing off from retry_backoff_ms (doubling, capped
        #: at retry_backoff_max_ms); after max_attempts it is set aside (``stratamem journal``)
        "retry_backoff_ms": 500,
        "retry_backoff_max_ms": 30000,
        "max_attempts": 6,
        #: applied entries are deleted after retention_s (turn keys stay in a compact index)
        "retention_s": 86400,
        #: a pruned entry's turn key still answers a resend for this long, then its compact index
        #: row goes too, so the index holds a window of turns, not every turn ever (0 = forever)
        "turn_key_retention_s": 30 * 86400,
        "prune_interval_s": 300.0,
        #: start-up replays unapplied entries this many at a time
        "replay_page": 1000,
        #: a listing, get or timeline made while start-up replay pages are still on disk waits
        #: this long for them, then fails with ``deadline_exceeded`` rather than answer without
        #: acknowledged turns (``stratamem export`` retries for its ``--wait``)
        "replay_read_wait_s": 30.0,
        "embedding_retry_max_attempts": 6,
        "embedding_retry_interval_s": 60,
    },
    "server": {
        "socket": "stratamem.sock",
        "listen": [],
        "tokens": {},
        "tls": {"cert_file": "", "key_file": "", "client_ca_file": ""},
        "max_workers": 8,
        # the resident service stops after this many seconds without calls or open streams (0 never)
        "idle_exit_s": 900,
    },
    "workspace": {"roots": [], "backend": "lancedb"},
    "hub": {"enabled": False, "role": "client", "port": 18912, "address": ""},
    "telemetry": {"enabled": False, "otlp_endpoint": ""},
    "logging": {
        "level": "info",
        "timezone": "UTC",
        "console": False,
        "file": True,
        #: size-rotated app/error logs: bytes per file and files kept
        "file_max_bytes": 50 * 1024 * 1024,
        "file_backups": 14,
        #: the side channels (``llm.jsonl``, ``perf.jsonl``, ``events.jsonl``)
        "llm_log": True,
        "perf_log": True,
        "events_log": True,
        #: inside a host process: leave logging to the host ("host") or install our sinks ("own")
        "embedded": "host",
        "redact_keys": ["api_key", "secret", "token", "password", "authorization"],
    },
    "runtime": {"executor_workers": 2},
}

#: Keys whose values are secrets (masked in health/config views).
SECRET_KEYS: frozenset[str] = frozenset({"api_key", "token", "tokens", "password", "secret"})


def defaults() -> dict[str, Any]:
    """A deep copy of the defaults table (callers may mutate it)."""
    return copy.deepcopy(DEFAULTS)
