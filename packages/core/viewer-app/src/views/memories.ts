// Memories: L1 traces with V, α, R and priority; edit a summary and tags, give feedback, delete.
import { api, qs } from "../api";
import { h, clear, empty, errorBox, num, when } from "../dom";

export function memories(root: HTMLElement, selected: string): void {
  const search = h("input", { type: "search", placeholder: "filter by text…", "data-testid": "trace-filter" });
  const list = h("div", { class: "list" });
  const detail = h("section", { class: "detail", "data-testid": "trace-detail" });
  root.append(
    h("h1", {}, "Memories"),
    h("form", { class: "toolbar", onsubmit: (e: Event) => (e.preventDefault(), load()) }, search,
      h("button", { type: "submit" }, "Filter")),
    h("div", { class: "split" }, list, detail),
  );

  async function load(): Promise<void> {
    clear(list);
    try {
      const data = await api(`/api/traces${qs({ q: search.value.trim(), limit: 200 })}`);
      if (!data.items.length) {
        list.append(
          search.value
            ? empty("Nothing matches", "Try another word, or clear the filter.")
            : empty("No traces yet", "Traces appear after an agent's first turn (or `stratamem ingest`)."),
        );
        return;
      }
      const table = h("table", { "data-testid": "trace-table" },
        h("thead", {}, h("tr", {}, ...["When", "Summary", "V", "α", "R", "Priority", "Tags"].map((t) => h("th", {}, t)))));
      const body = h("tbody", {});
      for (const t of data.items) {
        body.append(
          h("tr", { "data-trace": t.id, class: t.id === selected ? "selected" : "", onclick: () => (location.hash = `#/memories/${t.id}`) },
            h("td", {}, when(t.ts)),
            h("td", { class: "text" }, t.summary || t.user_text),
            h("td", {}, num(t.value)),
            h("td", {}, num(t.alpha)),
            h("td", {}, num(t.r_human)),
            h("td", {}, num(t.priority)),
            h("td", {}, (t.tags ?? []).join(", ")),
          ),
        );
      }
      table.append(body);
      list.append(table);
    } catch (err) {
      list.append(errorBox(err));
    }
  }

  async function show(id: string): Promise<void> {
    clear(detail);
    if (!id) {
      detail.append(h("p", { class: "muted" }, "Select a trace to see and edit it."));
      return;
    }
    try {
      const t = await api(`/api/traces/${encodeURIComponent(id)}`);
      const summary = h("textarea", { rows: 3, "data-testid": "summary-input" });
      summary.value = t.summary ?? "";
      const tags = h("input", { value: (t.tags ?? []).join(", "), "data-testid": "tags-input" });
      const status = h("span", { class: "status", "data-testid": "save-status" });
      const del = h("button", { class: "danger", type: "button", "data-testid": "delete" }, "Delete");
      let armed = false;
      del.addEventListener("click", async () => {
        if (!armed) {
          armed = true;
          del.textContent = "Click again to delete";
          return;
        }
        await api(`/api/traces/${encodeURIComponent(id)}`, "DELETE");
        location.hash = "#/memories";
      });
      const save = async (e: Event) => {
        e.preventDefault();
        status.textContent = "saving…";
        try {
          await api(`/api/traces/${encodeURIComponent(id)}`, "PATCH", {
            summary: summary.value,
            tags: tags.value.split(",").map((s) => s.trim()).filter(Boolean),
          });
          status.textContent = "saved";
          load();
        } catch (err) {
          status.textContent = err instanceof Error ? err.message : String(err);
        }
      };
      const feedback = (polarity: string) => async () => {
        await api("/api/feedback", "POST", { trace_id: id, polarity, magnitude: 1 });
        status.textContent = `feedback: ${polarity}`;
        load();
      };
      detail.append(
        h("h2", {}, t.id),
        h("dl", {},
          h("dt", {}, "Episode"), h("dd", {}, h("a", { href: `#/tasks/${t.episode_id}` }, t.episode_id)),
          h("dt", {}, "Owner"), h("dd", {}, `${t.owner.owner_agent_kind}/${t.owner.owner_profile_id}`),
          h("dt", {}, "V · α · R · priority"),
          h("dd", {}, `${num(t.value)} · ${num(t.alpha)} · ${num(t.r_human)} · ${num(t.priority)}`),
          h("dt", {}, "User"), h("dd", { class: "text" }, t.user_text),
          h("dt", {}, "Agent"), h("dd", { class: "text" }, t.agent_text),
        ),
        h("form", { class: "edit", onsubmit: save },
          h("label", {}, "Summary", summary),
          h("label", {}, "Tags (comma separated)", tags),
          h("div", { class: "row" },
            h("button", { type: "submit", "data-testid": "save" }, "Save"),
            h("button", { type: "button", onclick: feedback("positive") }, "👍 helpful"),
            h("button", { type: "button", onclick: feedback("negative") }, "👎 wrong"),
            del, status),
        ),
      );
    } catch (err) {
      detail.append(errorBox(err));
    }
  }

  load();
  show(selected);
}
