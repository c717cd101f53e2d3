// Node.js client of the Stratamem gRPC contract: loads proto/ at run time (no generated code),
// opens a session, runs turn start / turn end / search, and subscribes to events. Prints one JSON
// line with what it saw; exits non-zero on any unexpected failure.
// Usage: node client.mjs <proto-root> <target: unix:/path | host:port> [token]
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_CLIENT_DEPS ?? process.cwd(), "noop.js"));
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const [protoRoot, target, token] = process.argv.slice(2);
const definition = protoLoader.loadSync(
  ["stratamem/v1/memory.proto", "stratamem/v1/types.proto"],
  { includeDirs: [protoRoot], keepCase: true, longs: Number, defaults: true, oneofs: true },
);
const v1 = grpc.loadPackageDefinition(definition).stratamem.v1;
const client = new v1.MemoryService(target, grpc.credentials.createInsecure());

function meta() {
  const md = new grpc.Metadata();
  if (token) md.add("authorization", `Bearer ${token}`);
  return md;
}

function call(method, request, deadlineMs = 30000) {
  return new Promise((resolve, reject) => {
    client[method](request, meta(), { deadline: Date.now() + deadlineMs }, (err, resp) => {
      if (err) {
        const code = err.metadata?.get("stratamem-error-code")?.[0];
        reject(Object.assign(err, { stratamemCode: code ? String(code) : undefined }));
      } else resolve(resp);
    });
  });
}

const ns = { agent_kind: "node-e2e", profile_id: "default" };
const out = { events: [] };

// events: subscribe first, collect what our calls cause
const stream = client.SubscribeEvents({ types: [] }, meta());
stream.on("data", (ev) => out.events.push({ type: ev.type, seq: Number(ev.seq), epoch: ev.epoch }));
stream.on("error", (err) => {
  if (err.code !== grpc.status.CANCELLED) out.streamError = String(err.code);
});
await new Promise((r) => setTimeout(r, 300));

const health = await call("Health", {});
out.health = { ok: health.ok, version: health.version };
const { session_id } = await call("OpenSession", { agent: "node-e2e", session_id: "node-s1", namespace: ns, meta_json: "{\"client\":\"node\"}" });
out.session_id = session_id;

const now = Date.now();
const start = await call("TurnStart", {
  agent: "node-e2e", session_id, user_text: "which port does the zorblax service use?", ts: now,
  namespace: ns, deadline_at: now + 5000, turn_key: "t1",
});
out.turnStart = { episode_id: start.query?.episode_id ?? null, cut_off: start.cut_off };

const ack = await call("TurnEnd", {
  agent: "node-e2e", session_id, agent_text: "the zorblax service listens on port 7421",
  user_text: "which port does the zorblax service use?", ts: now + 1, namespace: ns, turn_key: "t1",
  tool_calls: [{ name: "grep", input_json: "{\"pattern\":\"zorblax\"}", output_json: "\"7421\"" }],
});
out.trace_id = ack.trace_id;

const found = await call("Search", { agent: "node-e2e", query: "zorblax port", namespace: ns, reason: "tool_driven" });
out.search = found.hits.map((h) => h.ref_id);

try {
  await call("CloseSession", { session_id: "no-such-session" });
  out.typedError = null;
} catch (err) {
  out.typedError = { grpc: err.code, code: err.stratamemCode };
}

await new Promise((r) => setTimeout(r, 500));
stream.cancel();
client.close();
console.log(JSON.stringify(out));
