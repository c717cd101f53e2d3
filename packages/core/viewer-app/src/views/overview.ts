// Overview: live counts, the recent event feed, and the two trends (memory growth, recall latency).
import { api, connect, subscribe } from "../api";
import { h, clear, empty, errorBox, when } from "../dom";
import { lineChart, barChart } from "../charts";

export function overview(root: HTMLElement): () => void {
  const kpis = h("div", { class: "kpis", "data-testid": "kpis" });
  const feed = h("ol", { class: "feed", "data-testid": "event-feed" });
  const charts = h("div", { class: "charts" });
  const hint = h("div", {});
  root.append(
    h("h1", {}, "Overview"),
    hint,
    kpis,
    charts,
    h("h2", {}, "Recent events"),
    feed,
  );

  const refresh = async () => {
    try {
      const sys = await api("/api/system");
      const c = sys.health.counts ?? {};
      clear(kpis);
      const cards: Array<[string, unknown]> = [
        ["Traces", c.traces],
        ["Policies", c.policies],
        ["World models", c.world_models],
        ["Skills", c.skills],
        ["Journal backlog", sys.health.journal_backlog],
        ["Journal set aside", c.journal_set_aside],
        ["Mode", sys.health.mode],
      ];
      for (const [label, value] of cards) {
        kpis.append(
          h("div", { class: "kpi", "data-kpi": label }, h("span", {}, label), h("b", {}, String(value ?? 0))),
        );
      }
      clear(hint);
      if (c.journal_set_aside) {
        hint.append(
          empty(
            `${c.journal_set_aside} capture-journal entries set aside`,
            "They failed every retry and are kept, not applied: `stratamem journal list` shows " +
              "each with its last error; `stratamem journal retry` or `discard` settles them.",
          ),
        );
      }
      if (!c.traces) {
        hint.append(
          empty(
            "No memories yet",
            "Connect an agent (stratamem openclaw install, the Hermes provider, or the DSH plugin) " +
              "or replay turns with `stratamem ingest FILE.jsonl`; they appear here live.",
          ),
        );
      }
      const m = await api("/api/metrics");
      clear(charts);
      charts.append(
        h("figure", {}, h("figcaption", {}, "Memory growth (traces)"),
          lineChart(m.memory_growth.map((g: any) => [g.day, g.total]))),
        h("figure", {}, h("figcaption", {}, "Recall latency (ms)"),
          barChart(m.recall_latency.map((s: any) => [when(s.ts), s.ms]))),
      );
    } catch (err) {
      clear(kpis);
      kpis.append(errorBox(err));
    }
  };

  // Each event once: the list starts from /api/events/recent, the stream then carries on after its
  // newest seq; events that arrive while the list loads wait, and any seq already shown is skipped.
  const shown = new Set<string>(); // epoch:seq (a restarted server counts from 1 again)
  let newest = 0;
  let loaded = false;
  let caughtUp = Infinity; // the seq the stream's hello says its replay ends at
  const early: any[] = [];
  const markLive = () => feed.setAttribute("data-stream", "live");
  const addEvent = (e: any, live: boolean) => {
    if (typeof e.seq === "number") {
      const key = `${e.epoch ?? ""}:${e.seq}`;
      if (shown.has(key)) return;
      shown.add(key);
      newest = Math.max(newest, e.seq);
    }
    const item = h(
      "li",
      {
        class: live ? "live" : "",
        "data-type": e.type,
        "data-seq": e.seq,
        "data-ts": e.ts,
        "data-seen": Date.now(),
      },
      h("time", {}, new Date(e.ts).toLocaleTimeString()),
      h("code", {}, e.type),
      h("span", { class: "payload" }, summary(e.payload)),
    );
    feed.prepend(item);
    while (feed.children.length > 100) feed.lastElementChild?.remove();
  };
  let pending: number | undefined;
  const onLive = (e: any) => {
    feed.querySelector(".muted")?.remove();
    addEvent(e, true);
    if (newest >= caughtUp) markLive();
    if (pending === undefined) pending = window.setTimeout(() => ((pending = undefined), refresh()), 500);
  };
  const off = subscribe(
    (kind, data) => {
      if (kind === "hello") {
        caughtUp = Number(data.seq ?? 0);
        if (loaded && newest >= caughtUp) markLive();
      } else if (kind === "core") {
        if (loaded) onLive(data);
        else early.push(data);
      }
    },
    { connect: false },
  );
  const start = () => {
    loaded = true;
    const opened = connect(newest);
    for (const e of early.splice(0)) onLive(e);
    if (!opened || newest >= caughtUp) markLive();
  };

  api("/api/events/recent?limit=30")
    .then((r) => {
      for (const e of [...r.items].reverse()) addEvent(e, false);
      if (!r.items.length) feed.append(h("li", { class: "muted" }, "No events yet: they stream in as agents work."));
    })
    .catch((err) => feed.append(errorBox(err)))
    .finally(start);
  refresh();
  return () => {
    off();
    if (pending !== undefined) clearTimeout(pending);
  };
}

function summary(payload: Record<string, unknown>): string {
  return Object.entries(payload ?? {})
    .slice(0, 4)
    .map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(" ");
}
