// Retrieval: what turn_start would inject for a query — tier by tier, each hit with its score details.
import { api, qs } from "../api";
import { h, clear, empty, errorBox, num } from "../dom";

export function retrieval(root: HTMLElement, initial: string): void {
  const q = h("input", { type: "search", placeholder: "a user message…", value: initial, "data-testid": "query" });
  const ns = h("select", { "data-testid": "namespace" });
  const reason = h("select", {},
    h("option", { value: "turn_start" }, "turn_start (tiers 1+2+3)"),
    h("option", { value: "tool_driven" }, "tool_driven (tiers 2+3)"));
  const out = h("section", { "data-testid": "preview" });
  root.append(
    h("h1", {}, "Retrieval"),
    h("form", { class: "toolbar", onsubmit: (e: Event) => (e.preventDefault(), run()) },
      q, ns, reason, h("button", { type: "submit", "data-testid": "run" }, "Preview")),
    out,
  );
  out.append(h("p", { class: "muted" }, "Type what a user might say to see which memories would be injected and why."));

  api("/api/system").then((sys) => {
    for (const n of sys.namespaces) ns.append(h("option", { value: n.namespace }, `${n.namespace} (${n.traces})`));
    if (!sys.namespaces.length) ns.append(h("option", { value: "" }, "no namespaces yet"));
    if (initial) run();
  });

  async function run(): Promise<void> {
    clear(out);
    if (!q.value.trim()) return;
    try {
      const r = await api(`/api/retrieval/preview${qs({ q: q.value, namespace: ns.value, reason: reason.value })}`);
      out.append(h("p", { class: "muted" },
        `${r.hits} hits for ${r.namespace} · ${r.took_ms} ms · tiers ${num(r.tier_latency_ms.tier1, 1)}/` +
          `${num(r.tier_latency_ms.tier2, 1)}/${num(r.tier_latency_ms.tier3, 1)} ms${r.cut_off ? " · cut off" : ""}`));
      if (!r.hits) {
        out.append(empty("Nothing would be injected", "No memory clears the thresholds for this query in this namespace."));
      }
      const names: Record<string, string> = { "1": "Tier 1 · skills", "2": "Tier 2 · traces & episodes", "3": "Tier 3 · world models" };
      for (const tier of ["1", "2", "3"]) {
        const hits = r.tiers[tier] ?? [];
        const sec = h("div", { class: "tier", "data-tier": tier }, h("h2", {}, `${names[tier]} (${hits.length})`));
        for (const hit of hits) {
          const details = Object.entries(hit.score_details ?? {}).map(([k, v]) =>
            h("span", { class: "chip" }, `${k}: ${typeof v === "number" ? num(v) : JSON.stringify(v)}`));
          sec.append(
            h("article", { class: "hit", "data-ref": hit.ref_id },
              h("header", {}, h("b", {}, `#${hit.rank}`), ` ${hit.ref_kind} `, h("code", {}, hit.ref_id), ` score ${num(hit.score)}`),
              h("p", { class: "text" }, hit.snippet),
              h("div", { class: "why" }, ...details),
            ),
          );
        }
        out.append(sec);
      }
      out.append(h("h2", {}, "Injected context"), h("pre", { "data-testid": "injected" }, r.injected_context || "(nothing)"));
    } catch (err) {
      out.append(errorBox(err));
    }
  }
}
