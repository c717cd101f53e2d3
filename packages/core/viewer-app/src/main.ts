// The viewer app: a hash router over ten views, one shared event stream, no framework.
import "./style.css";
import { h, clear } from "./dom";
import { overview } from "./views/overview";
import { memories } from "./views/memories";
import { tasks } from "./views/tasks";
import { policies, worldModels, skills } from "./views/layers";
import { retrieval } from "./views/retrieval";
import { workspace } from "./views/workspace";
import { logsView } from "./views/logs";
import { settings } from "./views/settings";

export type View = (root: HTMLElement, arg: string) => void | (() => void);

const VIEWS: Array<[string, string, View]> = [
  ["overview", "Overview", overview],
  ["memories", "Memories", memories],
  ["tasks", "Tasks", tasks],
  ["policies", "Policies", policies],
  ["world-models", "World models", worldModels],
  ["skills", "Skills", skills],
  ["retrieval", "Retrieval", retrieval],
  ["workspace", "Workspace", workspace],
  ["logs", "Logs", logsView],
  ["settings", "Settings", settings],
];

const app = document.getElementById("app")!;
const nav = h("nav", { class: "nav" }, h("div", { class: "brand" }, "Stratamem"));
const main = h("main", { class: "main", id: "view" });
for (const [id, label] of VIEWS) {
  nav.append(h("a", { href: `#/${id}`, "data-view": id }, label));
}
app.append(nav, main);

let cleanup: void | (() => void);

function route(): void {
  const [, id = "overview", arg = ""] = location.hash.split("/");
  const found = VIEWS.find(([v]) => v === id) ?? VIEWS[0];
  if (typeof cleanup === "function") cleanup();
  clear(main);
  for (const a of nav.querySelectorAll("a")) {
    a.classList.toggle("active", a.getAttribute("data-view") === found[0]);
  }
  main.setAttribute("data-view", found[0]);
  document.title = `${found[1]} · Stratamem`;
  cleanup = found[2](main, decodeURIComponent(arg));
}

window.addEventListener("hashchange", route);
route();
