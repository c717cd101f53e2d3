"""Capture: acknowledged ``turn_end`` latency (journal), background throughput to searchable, and the
time from the acknowledgement to the row being applied (vector + text searchable in LanceDB), and
``turn_start`` latency while a capture burst is being embedded against the same with the writer idle.

The floor under a durable ack is the disk's fsync: a bare fsync'd SQLite commit (WAL,
``synchronous=FULL``, one 3 KB row, its own connection and thread, on the same disk) is measured
interleaved with the acks of the same run, so the ack's own cost reads as ack minus bare commit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.corpus import AGENT, bench_turn
from bench.longmem import conversation_stream
from bench.stats import summarize


class BareCommit:
    """The baseline: one fsync'd SQLite commit of a journal-sized row, nothing else."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, payload TEXT)")
        self.exec = ThreadPoolExecutor(1, thread_name_prefix="bench-bare-commit")
        self.payload = "x" * 3000

    def _commit(self) -> float:
        t0 = time.perf_counter()
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO t(payload) VALUES (?)", (self.payload,))
        self.db.execute("COMMIT")
        return (time.perf_counter() - t0) * 1000

    async def timed(self) -> float:
        return await asyncio.get_running_loop().run_in_executor(self.exec, self._commit)

    def close(self) -> None:
        self.exec.shutdown(wait=True)
        self.db.close()


def _cpu_by_nice() -> dict[str, float]:
    """CPU seconds of this process's threads so far, by nice value (Linux ``/proc``; empty
    elsewhere): how much of the work ran below the acks' priority."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat") as fh:
                    f = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            key = f"nice {int(f[16])}"
            out[key] = round(out.get(key, 0.0) + (int(f[11]) + int(f[12])) / tick, 1)
    return out


def _memory_mb() -> dict[str, float]:
    """The process's resident memory now and at its peak (Linux ``/proc``; empty elsewhere): a
    second embedding session is not free."""
    out: dict[str, float] = {}
    with contextlib.suppress(OSError), open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    return out


def _vs_bare(acks: list[float], bare: list[float]) -> dict[str, Any]:
    a, b = summarize(acks), summarize(bare)
    return {
        "bare_commit_ms": b.as_dict(),
        "ack_minus_bare_ms": {
            "p50": round(a.median - b.median, 3),
            "p95": round(a.p95 - b.p95, 3),
        },
    }


def _turn(ns: Any, session_id: str, user: str, agent: str) -> Any:
    """A captured turn of the bench's agent, stamped now."""
    from stratamem.contract.dtos import TurnResult

    return TurnResult(
        agent=AGENT,
        session_id=session_id,
        agent_text=agent,
        ts=int(time.time() * 1000),
        user_text=user,
        namespace=ns,
    )


async def _search_p50(core: Any, ns: Any, texts: list[str]) -> dict[str, Any]:
    from stratamem.contract.dtos import RetrievalQuery

    ms = []
    for text in texts:
        t0 = time.perf_counter()
        await core.search(RetrievalQuery(agent=AGENT, query=text, namespace=ns))
        ms.append((time.perf_counter() - t0) * 1000)
    return summarize(ms[3:]).as_dict()


async def _table_shape(core: Any) -> dict[str, Any]:
    st = (await core.store.stats()).get("traces", {})
    return {"rows": st.get("rows"), "version": st.get("version"), "fragments": st.get("fragments")}


async def _flush_per_turn(core: Any, stream: Any, ns: Any, turns: int = 150) -> dict[str, Any]:
    """The seed comparison's worst write pattern: every turn flushed before the next, so LanceDB
    gains a fragment and a version per turn; reads are measured before and after ``optimize``.

    Both measured passes find the probes' query vectors in the embedding cache (one unmeasured-
    for-the-ratio pass embeds them first, reported as ``first_pass_ms``): an earlier version timed
    the fragmented table's pass with fresh embeddings and the optimised one with cached ones, and
    read the embedder's cost (~7 ms) as a cost of fragments."""
    for i in range(turns):
        sid, user, agent = stream[i % len(stream)]
        await core.turn_end(_turn(ns, f"fpt-{sid}", f"{user} ({i})", agent))
        await core.flush(60)
    probes = [stream[i][1] for i in range(0, min(len(stream), 43))]
    first = await _search_p50(core, ns, probes)  # embeds each probe once (the cache keeps it)
    before = {
        "table": await _table_shape(core),
        "search_ms": await _search_p50(core, ns, probes),
        "first_pass_ms": first,
    }
    await core.store.optimize()
    after = {"table": await _table_shape(core), "search_ms": await _search_p50(core, ns, probes)}
    return {"turns": turns, "fragmented": before, "optimized": after}


async def _recall_under_burst(
    core: Any, tmp: Path, embedder: Any, overrides: dict[str, Any], seed: int, burst_turns: int
) -> dict[str, Any]:
    """``turn_start`` p50/p95 while ``core``'s writer embeds a burst of ``burst_turns``, and the
    same with it idle, one call every 100 ms (the paced capture's rate), by two readers taking
    turns: one on a second home of the same process (same embedder, same event loop: the
    contention for the cores alone) and one in another namespace of the burst's own home (a
    second tenant: it must not wait for the burst's writes, which its scope cannot see; session
    22 found it waited half its deadline for them). Each reader and phase asks its own
    questions: a cached query embeds nothing."""
    from stratamem.contract.dtos import Namespace
    from stratamem.core.engine.assemble import open_local_core

    ns = Namespace(agent_kind=AGENT)
    tenant = Namespace(agent_kind=AGENT, profile_id="bench-tenant-b")
    filler = conversation_stream(seed + 1, 300)
    load = conversation_stream(seed + 2, burst_turns)
    asks = [u for _, u, _ in conversation_stream(seed + 3, 480)]
    home_asks, tenant_asks = asks[:240], asks[240:]  # each reader its own questions
    recall = await open_local_core(tmp / "recall-home", embedder=embedder, **overrides)
    try:
        for sid, user, agent in filler:
            await recall.turn_end(_turn(ns, f"r-{sid}", user, agent))
            await core.turn_end(_turn(tenant, f"t-{sid}", user, agent))
        await recall.flush(120)
        await core.flush(120)

        async def ask(target: Any, who: Any, text: str, n: int) -> float:
            t0 = time.perf_counter()
            await target.turn_start(bench_turn(who, f"ask-{n}", text))
            return (time.perf_counter() - t0) * 1000

        idle: list[float] = []
        idle_tenant: list[float] = []
        for n in range(60):
            idle.append(await ask(recall, ns, home_asks[n], n))
            idle_tenant.append(await ask(core, tenant, tenant_asks[n], n))
            await asyncio.sleep(0.1)
        for sid, user, agent in load:
            await core.turn_end(_turn(ns, f"l-{sid}", user, agent))
        t0 = time.perf_counter()
        loaded: list[float] = []
        loaded_tenant: list[float] = []
        for n in range(60, 240):
            if core.services.journal.backlog() == 0:
                break
            loaded.append(await ask(recall, ns, home_asks[n], n))
            loaded_tenant.append(await ask(core, tenant, tenant_asks[n], n))
            await asyncio.sleep(0.1)
        await core.flush(300)
        drained_s = time.perf_counter() - t0
    finally:
        await recall.shutdown()

    def phases(idle_ms: list[float], burst_ms: list[float]) -> dict[str, Any]:
        a, b = summarize(idle_ms[5:]), summarize(burst_ms)
        return {
            "turn_start_idle_ms": a.as_dict(),
            "turn_start_during_burst_ms": b.as_dict(),
            "ratio_p50": round(b.median / a.median, 2) if a.median else None,
            "ratio_p95": round(b.p95 / a.p95, 2) if a.p95 else None,
        }

    return {
        "burst_turns": burst_turns,
        **phases(idle, loaded),
        "same_home_other_namespace": phases(idle_tenant, loaded_tenant),
        "drain_s": round(drained_s, 2),
    }


async def run_capture(
    embedder: Any,
    paced_turns: int,
    burst_turns: int,
    seed: int,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from stratamem.contract.dtos import Namespace, RetrievalQuery
    from stratamem.core.engine.assemble import open_local_core

    ns = Namespace(agent_kind=AGENT)
    stream = conversation_stream(seed, paced_turns + burst_turns)
    applied_at: dict[str, float] = {}

    def observe(ev: Any) -> None:
        if ev.type == "trace.created":
            applied_at.setdefault(str(ev.payload.get("trace_id")), time.perf_counter())

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-capture-") as tmp:
        core = await open_local_core(Path(tmp) / "home", embedder=embedder, **(overrides or {}))
        core.bus.add_observer(observe)
        bare = BareCommit(Path(tmp) / "bare.db")
        try:

            async def end(i: int) -> tuple[float, str]:
                sid, user, agent = stream[i]
                t0 = time.perf_counter()
                ack = await core.turn_end(_turn(ns, sid, user, agent))
                return t0, ack.trace_id

            # paced: one turn every 100 ms, as an agent does; the writer keeps up
            acks, to_applied, acked_at, bare_ms = [], [], {}, []
            for i in range(paced_turns):
                bare_ms.append(await bare.timed())
                t0, tid = await end(i)
                t1 = time.perf_counter()
                acks.append((t1 - t0) * 1000)
                acked_at[tid] = t1
                await asyncio.sleep(0.1)
            await core.flush(60)
            for tid, t1 in acked_at.items():
                if tid in applied_at:
                    to_applied.append((applied_at[tid] - t1) * 1000)
            warm = min(5, len(acks) // 5)
            out["paced"] = {
                "turns": paced_turns,
                "ack_ms": summarize(acks[warm:]).as_dict(),
                **_vs_bare(acks[warm:], bare_ms[warm:]),
                "ack_to_applied_ms": summarize(to_applied[warm:]).as_dict(),
            }
            # burst: back to back, the writer batches behind; searchable throughput
            # (a bare commit after every 4th ack, off the clock, samples the disk meanwhile)
            burst_acks: list[float] = []
            burst_bare: list[float] = []
            start = time.perf_counter()
            last_tid = ""
            for i in range(paced_turns, paced_turns + burst_turns):
                t0, last_tid = await end(i)
                burst_acks.append((time.perf_counter() - t0) * 1000)
                if i % 4 == 3:
                    burst_bare.append(await bare.timed())
            acked_s = time.perf_counter() - start - sum(burst_bare) / 1000
            await core.flush(300)
            drained_s = time.perf_counter() - start
            # proof the last burst turn is searchable (FTS + vector over LanceDB, nothing pending)
            probe = stream[paced_turns + burst_turns - 1][1]
            res = await core.search(RetrievalQuery(agent=AGENT, query=probe, namespace=ns))
            out["burst"] = {
                "turns": burst_turns,
                "ack_ms": summarize(burst_acks).as_dict(),
                **_vs_bare(burst_acks, burst_bare),
                "acks_per_s": round(burst_turns / acked_s, 1),
                "searchable_per_s": round(burst_turns / drained_s, 1),
                "drain_after_last_ack_s": round(drained_s - acked_s, 2),
                "last_turn_found_by_search": any(h.ref_id == last_tid for h in res.hits),
            }
            out["flush_per_turn"] = await _flush_per_turn(core, stream, ns)
            out["recall_under_burst"] = await _recall_under_burst(
                core, Path(tmp), embedder, overrides or {}, seed, burst_turns
            )
            out["cpu_s_by_thread_nice"] = _cpu_by_nice()
            out["process_memory_mb"] = _memory_mb()
            out["read_your_writes"] = (
                "an acknowledged turn is searchable lexically at once (pending rows are searched in "
                "memory); ack_to_applied is when its vector is in LanceDB"
            )
        finally:
            bare.close()
            await core.shutdown()
    return out
