// The learned layers: L2 policies, L3 world models and skills (with η and lifecycle).
import { api } from "../api";
import { h, empty, errorBox, num, when } from "../dom";

const FULL_MODE_HINT =
  "Set algorithm.lightweight_memory.enabled to false in Settings (and configure an LLM) to let the " +
  "core learn them from rewarded traces.";

function table(rows: any[], cols: Array<[string, (r: any) => unknown]>, testid: string): HTMLElement {
  return h("table", { "data-testid": testid },
    h("thead", {}, h("tr", {}, ...cols.map(([c]) => h("th", {}, c)))),
    h("tbody", {}, ...rows.map((r) => h("tr", { "data-id": r.id }, ...cols.map(([, f]) => h("td", { class: "text" }, String(f(r) ?? "")))))),
  );
}

function layer(
  title: string,
  path: string,
  cols: Array<[string, (r: any) => unknown]>,
  emptyTitle: string,
): (root: HTMLElement) => void {
  return (root) => {
    root.append(h("h1", {}, title));
    const box = h("div", {});
    root.append(box);
    api(`${path}?limit=200`)
      .then((data) => {
        box.append(data.items.length ? table(data.items, cols, `${path.split("/")[2]}-table`) : empty(emptyTitle, FULL_MODE_HINT));
      })
      .catch((err) => box.append(errorBox(err)));
  };
}

export const policies = layer("Policies", "/api/policies", [
  ["Title", (p) => p.title],
  ["Status", (p) => p.status],
  ["Support", (p) => p.support],
  ["Gain", (p) => num(p.gain)],
  ["Trigger", (p) => p.trigger],
  ["Procedure", (p) => p.procedure],
  ["Updated", (p) => when(p.updated_at)],
], "No policies yet");

export const worldModels = layer("World models", "/api/world-models", [
  ["Title", (w) => w.title],
  ["Confidence", (w) => num(w.confidence)],
  ["Status", (w) => w.status],
  ["Body", (w) => w.body],
  ["Policies", (w) => w.policy_ids.length],
  ["Updated", (w) => when(w.updated_at)],
], "No world models yet");

export const skills = layer("Skills", "/api/skills", [
  ["Name", (s) => s.name],
  ["Lifecycle", (s) => s.status],
  ["η", (s) => num(s.eta)],
  ["Trials", (s) => `${s.trials_passed}/${s.trials_attempted}`],
  ["Uses", (s) => s.usage_count],
  ["Invocation guide", (s) => s.invocation_guide],
], "No skills yet");
