// Workspace: MEMORY.md and the layered files (DREAMS.md, daily notes) of a project, and its recall records.
import { api, qs, ApiError } from "../api";
import { h, clear, empty, errorBox } from "../dom";

export function workspace(root: HTMLElement): void {
  root.append(h("h1", {}, "Workspace"));
  const box = h("div", {});
  root.append(box);
  api("/api/memory")
    .then((w) => {
      if (!w.root) {
        box.append(empty("No workspace configured",
          "Add a project directory to workspace.roots (Settings or config.yaml) and restart `stratamem serve`."));
        return;
      }
      const rootQ = { root: w.root };
      const editor = h("textarea", { rows: 18, class: "code", "data-testid": "file-editor" });
      const current = h("code", {}, "MEMORY.md");
      const status = h("span", { class: "status", "data-testid": "file-status" });
      let path = "MEMORY.md";
      editor.value = w.memory?.content ?? "";
      const open = async (p: string) => {
        status.textContent = "";
        try {
          const f = await api(`/api/memory/file${qs({ ...rootQ, path: p })}`);
          path = p;
          current.textContent = p;
          editor.value = f.content;
        } catch (err) {
          status.textContent = err instanceof Error ? err.message : String(err);
        }
      };
      const save = async () => {
        try {
          const r = path === "MEMORY.md"
            ? await api("/api/memory", "PUT", { root: w.root, content: editor.value })
            : await api("/api/memory/file", "PUT", { root: w.root, path, content: editor.value });
          status.textContent = `saved ${r.bytes_written} bytes`;
        } catch (err) {
          status.textContent = err instanceof ApiError ? err.message : String(err);
        }
      };
      const newDaily = h("button", { type: "button", onclick: () => {
        path = `${new Date().toISOString().slice(0, 10)}.md`;
        current.textContent = path;
        editor.value = `# ${path.slice(0, 10)}\n\n`;
      } }, "New daily note");
      const files = h("ul", { class: "files" },
        ...w.files.map((f: any) => h("li", {}, h("a", { href: "#/workspace", onclick: (e: Event) => (e.preventDefault(), open(f.path)) }, f.path), h("small", {}, ` ${f.kind} · ${f.size} B`))));
      if (!w.files.length) {
        files.append(h("li", { class: "muted" }, "No layered files yet: saving MEMORY.md creates it."));
      }
      const recallQ = h("input", { type: "search", placeholder: "search recall records…" });
      const recall = h("div", {});
      const searchRecall = async () => {
        clear(recall);
        try {
          const r = await api(`/api/memory/recall${qs({ ...rootQ, q: recallQ.value })}`);
          if (!r.hits.length) recall.append(empty("No recall records", "Agents append them with the workspace recall tools."));
          for (const hit of r.hits) recall.append(h("article", { class: "hit" }, h("header", {}, h("code", {}, hit.kind), ` ${hit.score.toFixed(3)}`), h("p", { class: "text" }, hit.content)));
        } catch (err) {
          recall.append(errorBox(err));
        }
      };
      box.append(
        h("p", { class: "muted" }, `${w.root} · backend ${w.backend.type}${w.backend.writable ? "" : " (read-only)"}`),
        h("div", { class: "split" },
          h("div", {}, h("h2", {}, "Files"), files, newDaily),
          h("div", {}, h("h2", {}, "Editing ", current), editor,
            h("div", { class: "row" }, h("button", { type: "button", onclick: save, "data-testid": "file-save" }, "Save"), status))),
        h("h2", {}, "Recall records"),
        h("form", { class: "toolbar", onsubmit: (e: Event) => (e.preventDefault(), searchRecall()) }, recallQ, h("button", { type: "submit" }, "Search")),
        recall,
      );
      searchRecall();
    })
    .catch((err) => box.append(errorBox(err)));
}
