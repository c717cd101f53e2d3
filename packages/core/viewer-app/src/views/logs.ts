// Logs: the home's recent log lines, then live ones from the event stream, filtered by level and channel.
import { api, qs, subscribe } from "../api";
import { h, clear, errorBox } from "../dom";

const LEVELS = ["debug", "info", "warning", "error", "critical"];
const rank = (l: string) => Math.max(0, LEVELS.indexOf(l === "warn" ? "warning" : l));

export function logsView(root: HTMLElement): () => void {
  const level = h("select", { "data-testid": "level" }, ...LEVELS.map((l) => h("option", { value: l, selected: l === "info" }, l)));
  const channel = h("input", { placeholder: "channel (all)", "data-testid": "channel" });
  const live = h("input", { type: "checkbox", checked: true });
  const out = h("ol", { class: "logs", "data-testid": "log-lines" });
  root.append(
    h("h1", {}, "Logs"),
    h("form", { class: "toolbar", onsubmit: (e: Event) => (e.preventDefault(), load()) },
      h("label", {}, "Level ", level), channel, h("label", {}, live, " live"), h("button", { type: "submit" }, "Apply")),
    out,
  );
  const line = (r: any) =>
    h("li", { class: `lvl-${r.level}` },
      h("time", {}, String(r.timestamp ?? "").slice(11, 23)),
      h("b", {}, r.level), h("code", {}, r.channel ?? ""), h("span", {}, r.event ?? ""),
      h("small", {}, JSON.stringify(Object.fromEntries(Object.entries(r).filter(([k]) => !["timestamp", "level", "channel", "event"].includes(k))))));
  const keep = (r: any) => rank(r.level ?? "info") >= rank(level.value) && (!channel.value || r.channel === channel.value);

  async function load(): Promise<void> {
    clear(out);
    try {
      const data = await api(`/api/logs/tail${qs({ level: level.value, channel: channel.value, limit: 300 })}`);
      for (const r of data.items) out.prepend(line(r));
      if (!data.items.length) out.append(h("li", { class: "muted" }, "No log lines at this level yet."));
    } catch (err) {
      out.append(errorBox(err));
    }
  }
  load();
  level.addEventListener("change", load);
  return subscribe((kind, data) => {
    if (kind !== "log" || !live.checked || !keep(data)) return;
    out.querySelector(".muted")?.remove();
    out.prepend(line(data));
    while (out.children.length > 500) out.lastElementChild?.remove();
  });
}
