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

export type Listener = (kind: "core" | "log", data: any) => void;

const listeners = new Set<Listener>();
let source: EventSource | null = null;

/** One EventSource for the whole app: core events and log lines, fanned out to the open view. */
export function subscribe(fn: Listener): () => void {
  listeners.add(fn);
  if (!source) {
    source = new EventSource("/events");
    source.addEventListener("core", (e) => emit("core", (e as MessageEvent).data));
    source.addEventListener("log", (e) => emit("log", (e as MessageEvent).data));
  }
  return () => listeners.delete(fn);
}

function emit(kind: "core" | "log", raw: string): void {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return;
  }
  for (const fn of listeners) fn(kind, data);
}
