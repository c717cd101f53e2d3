// Tasks: episodes (one task or topic each) and, for the selected one, its timeline of traces.
import { api } from "../api";
import { h, clear, empty, errorBox, num, when } from "../dom";

export function tasks(root: HTMLElement, selected: string): void {
  const list = h("div", { class: "list" });
  const timeline = h("section", { class: "detail", "data-testid": "timeline" });
  root.append(h("h1", {}, "Tasks"), h("div", { class: "split" }, list, timeline));

  api("/api/episodes?limit=200")
    .then((data) => {
      if (!data.items.length) {
        list.append(empty("No tasks yet", "Each user task becomes an episode when an agent's turn is captured."));
        return;
      }
      const ul = h("ul", { class: "cards", "data-testid": "episode-list" });
      for (const e of data.items) {
        ul.append(
          h("li", { class: e.id === selected ? "selected" : "", "data-episode": e.id },
            h("a", { href: `#/tasks/${e.id}` }, e.preview || e.id),
            h("small", {}, `${e.status} · ${e.trace_ids.length} traces · ${when(e.started_at)}`),
            e.r_task !== null ? h("small", {}, ` · R ${num(e.r_task)}`) : null,
          ),
        );
      }
      list.append(ul);
    })
    .catch((err) => list.append(errorBox(err)));

  if (!selected) {
    timeline.append(h("p", { class: "muted" }, "Select a task to see its timeline."));
    return;
  }
  api(`/api/episodes/${encodeURIComponent(selected)}`)
    .then((data) => {
      clear(timeline);
      const e = data.episode;
      timeline.append(h("h2", {}, e.preview || e.id), h("p", { class: "muted" },
        `${e.status}${e.close_reason ? ` (${e.close_reason})` : ""} · started ${when(e.started_at)}`));
      const ol = h("ol", { class: "timeline" });
      for (const t of data.timeline) {
        ol.append(
          h("li", {},
            h("time", {}, when(t.ts)),
            h("div", { class: "text" }, h("b", {}, "User: "), t.user_text),
            h("div", { class: "text" }, h("b", {}, "Agent: "), t.agent_text),
            t.tool_calls?.length ? h("div", {}, `tools: ${t.tool_calls.map((c: any) => c.name).join(", ")}`) : null,
            h("small", {}, `V ${num(t.value)} · α ${num(t.alpha)} · `, h("a", { href: `#/memories/${t.id}` }, t.id)),
          ),
        );
      }
      timeline.append(data.timeline.length ? ol : empty("No traces", "This episode has no captured turn yet."));
    })
    .catch((err) => timeline.append(errorBox(err)));
}
