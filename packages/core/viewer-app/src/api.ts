// Calls to the viewer's JSON API; a failure becomes an ApiError carrying the server's code and details.

export interface ErrorBody {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

export class ApiError extends Error {
  constructor(
    public status: number,
    public body: ErrorBody,
  ) {
    super(`${body.message} [${body.code}]`);
  }
}

export async function api<T = any>(path: string, method = "GET", body?: unknown): Promise<T> {
  const init: RequestInit = { method, headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["Content-Type"] = "application/json";
  }
  const resp = await fetch(path, init);
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const err = (data as { error?: ErrorBody }).error ?? {
      code: "internal",
      message: `HTTP ${resp.status}`,
      details: {},
    };
    throw new ApiError(resp.status, err);
  }
  return data as T;
}

export function qs(params: Record<string, string | number | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
}

export type Listener = (kind: "core" | "log" | "hello", data: any) => void;

const listeners = new Set<Listener>();
let source: EventSource | null = null;

/** Listen to the app's one EventSource (core events, log lines, the stream's hello), fanned out to the
 * open view. The stream opens with the first listener unless `connect: false`: a view that first loads
 * what it shows then calls `connect(since)` itself, so the server replays nothing it already has. */
export function subscribe(fn: Listener, opts: { connect?: boolean } = {}): () => void {
  listeners.add(fn);
  if (opts.connect !== false) connect();
  return () => listeners.delete(fn);
}

/** Open the stream (once per page). `since`: the newest core event seq already shown; without it the
 * server replays its recent events. Returns false when the stream was already open (and live). */
export function connect(since?: number): boolean {
  if (source) return false;
  source = new EventSource(since === undefined ? "/events" : `/events?since=${since}`);
  for (const kind of ["core", "log", "hello"] as const) {
    source.addEventListener(kind, (e) => emit(kind, (e as MessageEvent).data));
  }
  return true;
}

function emit(kind: "core" | "log" | "hello", raw: string): void {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return;
  }
  for (const fn of listeners) fn(kind, data);
}
