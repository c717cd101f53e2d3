// Settings: the config as a form per section; a save is validated by the server and written to config.yaml,
// and a rejected key gets its message right next to its field.
import { api, ApiError } from "../api";
import { h, clear, errorBox } from "../dom";

const MASK = "••••";

export function settings(root: HTMLElement): void {
  root.append(h("h1", {}, "Settings"));
  const box = h("div", {});
  root.append(box);
  api("/api/config")
    .then((data) => {
      box.append(h("p", { class: "muted" }, `Editing ${data.path}. Changes apply when the service restarts; secrets show as ${MASK}.`));
      for (const [section, value] of Object.entries(data.config)) {
        if (value && typeof value === "object" && !Array.isArray(value)) box.append(form(section, value as Record<string, unknown>));
      }
    })
    .catch((err) => box.append(errorBox(err)));
}

function form(section: string, values: Record<string, unknown>): HTMLElement {
  const fields = new Map<string, [HTMLInputElement, unknown, HTMLElement]>();
  const rows: HTMLElement[] = [];
  const walk = (prefix: string, obj: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(obj)) {
      const key = `${prefix}.${k}`;
      if (v && typeof v === "object" && !Array.isArray(v)) {
        walk(key, v as Record<string, unknown>);
        continue;
      }
      const input = h("input", { name: key, "data-key": key });
      if (typeof v === "boolean") {
        input.type = "checkbox";
        input.checked = v;
      } else if (typeof v === "number") {
        input.type = "number";
        input.step = "any";
        input.value = String(v);
      } else {
        input.value = Array.isArray(v) ? JSON.stringify(v) : String(v ?? "");
      }
      const err = h("span", { class: "field-error", "data-error-for": key, role: "alert" });
      fields.set(key, [input, v, err]);
      rows.push(h("label", { class: "field" }, h("span", {}, key.slice(section.length + 1)), input, err));
    }
  };
  walk(section, values);
  const status = h("span", { class: "status" });
  const el = h("form", { class: "settings", "data-section": section }, h("h2", {}, section), ...rows,
    h("div", { class: "row" }, h("button", { type: "submit" }, `Save ${section}`), status));
  el.addEventListener("submit", async (e) => {
    e.preventDefault();
    const patch: Record<string, unknown> = {};
    for (const [key, [input, orig, err]] of fields) {
      err.textContent = "";
      let v: unknown;
      if (input.type === "checkbox") v = input.checked;
      else if (input.type === "number") v = input.value === "" ? NaN : Number(input.value);
      else if (Array.isArray(orig)) {
        try { v = JSON.parse(input.value); } catch { v = input.value; }
      } else v = input.value;
      if (JSON.stringify(v) === JSON.stringify(orig) || v === MASK) continue;
      let node = patch;
      const parts = key.split(".");
      for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
      node[parts[parts.length - 1]] = typeof v === "number" && Number.isNaN(v) ? input.value : v;
    }
    if (!Object.keys(patch).length) {
      status.textContent = "nothing changed";
      return;
    }
    status.textContent = "saving…";
    try {
      await api("/api/config", "PATCH", patch);
      status.textContent = "saved to config.yaml (restart to apply)";
      for (const [key, [input]] of fields) {
        const f = fields.get(key)!;
        f[1] = input.type === "checkbox" ? input.checked : input.type === "number" ? Number(input.value) : Array.isArray(f[1]) ? f[1] : input.value;
      }
    } catch (err) {
      status.textContent = "not saved";
      if (err instanceof ApiError && typeof err.body.details.key === "string") {
        const target = fields.get(err.body.details.key);
        if (target) {
          clear(target[2]);
          target[2].textContent = err.body.message;
          target[0].setAttribute("aria-invalid", "true");
          return;
        }
      }
      status.textContent = err instanceof Error ? err.message : String(err);
    }
  });
  return el;
}
