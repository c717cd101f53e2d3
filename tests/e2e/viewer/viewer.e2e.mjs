// Drives the viewer in Debian's Chromium: each start-up event once on Overview, every view, the
// retrieval preview, a Settings edit, a trace edit in Memories and a live event on Overview. Prints one JSON line of findings for pytest to judge.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(join(process.env.VIEWER_E2E_DEPS, "package.json"));
const { chromium } = require("playwright-core");

const [url, outDir, home, turnFile, query, traceId, newSummary] = process.argv.slice(2);
const BIN = process.env.STRATAMEM_BIN;
const FLAGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const VIEWS = {
  overview: "[data-kpi]",
  memories: "[data-testid=trace-table]",
  tasks: "[data-testid=episode-list]",
  policies: "[data-testid=empty], [data-testid=policies-table]",
  "world-models": "[data-testid=empty], [data-testid=world-models-table]",
  skills: "[data-testid=empty], [data-testid=skills-table]",
  retrieval: "[data-testid=query]",
  workspace: "[data-testid=file-editor], [data-testid=empty]",
  logs: "[data-testid=log-lines] li",
  settings: "form.settings[data-section=retrieval]",
};

mkdirSync(outDir, { recursive: true });
const result = { consoleErrors: [], views: {} };
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: FLAGS, headless: true });
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  // the deliberately invalid Settings save is answered 400: Chromium logs that one, nothing else may
  let expecting400 = false;
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    if (expecting400 && m.text().includes("status of 400")) return;
    result.consoleErrors.push(`${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => result.consoleErrors.push(`${page.url()}: ${e.message}`));
  const shot = (name) => page.screenshot({ path: join(outDir, `${name}.png`), fullPage: true });

  const eventStreams = [];
  page.on("request", (r) => {
    if (new URL(r.url()).pathname === "/events") eventStreams.push(r.url());
  });

  // Overview on a fresh load: the recent list plus the stream's catch-up show each event once
  await page.goto(`${url}#/overview`);
  await page.waitForSelector("[data-testid=event-feed][data-stream=live]", { timeout: 20000 });
  result.feedItems = await page.locator("[data-testid=event-feed] li[data-type]").evaluateAll((els) =>
    els.map((e) => ({
      seq: e.dataset.seq ?? null,
      type: e.dataset.type,
      ts: e.dataset.ts,
      payload: e.querySelector(".payload")?.textContent ?? "",
    })),
  );
  result.eventStreams = eventStreams;
  await page.waitForSelector("[data-kpi]", { timeout: 20000 });
  result.kpis = Object.fromEntries(
    await page.locator("[data-kpi]").evaluateAll((els) => els.map((e) => [e.dataset.kpi, e.querySelector("b")?.textContent])),
  );

  for (const [view, ready] of Object.entries(VIEWS)) {
    await page.goto(`${url}#/${view}`);
    await page.waitForSelector(`main[data-view="${view}"]`);
    await page.waitForSelector(ready, { timeout: 20000 });
    await page.waitForTimeout(300);
    result.views[view] = await page.locator("main h1").innerText();
    await shot(view);
  }

  // Retrieval: the tiers for a query, as the page shows them
  await page.goto(`${url}#/retrieval/${encodeURIComponent(query)}`);
  await page.waitForSelector("[data-ref]", { timeout: 30000 });
  result.retrievalRefs = await page.locator("[data-ref]").evaluateAll((els) => els.map((e) => e.dataset.ref));
  await shot("retrieval-preview");

  // Settings: a valid edit is saved, an invalid one is reported next to its field
  await page.goto(`${url}#/settings`);
  const retrievalForm = page.locator("form.settings[data-section=retrieval]");
  await retrievalForm.locator('input[data-key="retrieval.tier2_top_k"]').fill("7");
  await retrievalForm.locator("button[type=submit]").click();
  await retrievalForm.locator(".status", { hasText: "saved to config.yaml" }).waitFor();
  await retrievalForm.locator('input[data-key="retrieval.mmr_lambda"]').fill("5");
  expecting400 = true;
  await retrievalForm.locator("button[type=submit]").click();
  const fieldError = retrievalForm.locator('[data-error-for="retrieval.mmr_lambda"]');
  await fieldError.filter({ hasText: /./ }).waitFor();
  expecting400 = false;
  result.settingsFieldError = await fieldError.innerText();
  await shot("settings-validation");

  // Memories: edit a trace's summary
  await page.goto(`${url}#/memories/${traceId}`);
  await page.waitForSelector("[data-testid=summary-input]");
  await page.fill("[data-testid=summary-input]", newSummary);
  await page.click("[data-testid=save]");
  await page.locator("[data-testid=save-status]", { hasText: "saved" }).waitFor();
  await shot("memories-edit");

  // Overview: a turn made elsewhere shows up live
  await page.goto(`${url}#/overview`);
  await page.waitForSelector("[data-testid=event-feed]");
  await page.waitForTimeout(500);
  const code = await new Promise((resolve) => {
    const child = spawn(BIN, ["--home", home, "ingest", turnFile, "--no-progress"], { stdio: "ignore" });
    child.on("exit", resolve);
  });
  result.ingestExit = code;
  const live = page.locator('[data-testid=event-feed] li.live[data-type="turn.captured"]').first();
  await live.waitFor({ timeout: 30000 });
  const ts = Number(await live.getAttribute("data-ts"));
  const seen = Number(await live.getAttribute("data-seen"));
  result.liveLatencyMs = seen - ts;
  await shot("overview-live");
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
