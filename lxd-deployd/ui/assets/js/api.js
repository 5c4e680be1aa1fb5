// The daemon's REST API, as the CLI uses it. Errors carry the API's own message.

// bindingKey is where the page keeps its session's binding (doc/ui.md): storage of this
// origin, scheme, host and port, which a page on another port of the host cannot read
// although the browser sends it the session cookie.
const bindingKey = "lxd-deployd-session-binding";

export const session = { info: null, binding: localStorage.getItem(bindingKey) || "" };

// keepBinding stores the binding the sign-in answered, or forgets it ("").
export function keepBinding(binding) {
  session.binding = binding || "";
  if (session.binding) localStorage.setItem(bindingKey, session.binding);
  else localStorage.removeItem(bindingKey);
}

// view is what the address bar selects beyond the page: the LXD project of the deployments
// shown (?project= in the fragment, default "default").
export const view = { project: "default" };

// withProject adds the project to a deployments URL, as the CLI's --project does.
function withProject(path) {
  if (view.project === "default" || !path.startsWith("/1.0/deployments")) return path;
  return path + (path.includes("?") ? "&" : "?") + "project=" + encodeURIComponent(view.project);
}

export class APIError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

// call sends a request and answers the envelope's metadata (an operation for async answers).
export async function call(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  // Every request carries the binding: without it the cookie is no session.
  if (session.binding) headers["X-Lxd-Deployd-Session"] = session.binding;
  if (method !== "GET" && session.info && session.info.csrf_token) {
    headers["X-Lxd-Deployd-Csrf"] = session.info.csrf_token;
  }
  let res;
  try {
    res = await fetch(withProject(path), {
      method, headers, credentials: "same-origin", cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new APIError(`cannot reach the daemon: ${err.message}`, 0);
  }
  let envelope = null;
  try {
    envelope = await res.json();
  } catch {
    throw new APIError(`${method} ${path}: HTTP ${res.status}`, res.status);
  }
  if (!res.ok || envelope.type === "error") {
    throw new APIError(envelope.error || `${method} ${path}: HTTP ${res.status}`, res.status);
  }
  return envelope.metadata;
}

export const get = (path) => call("GET", path);

// waitOperation follows an async answer to its end and throws the operation's error.
export async function waitOperation(op) {
  if (!op || !op.id) return op;
  const done = await get(`/1.0/operations/${encodeURIComponent(op.id)}/wait?timeout=120`);
  if (done.status === "Failure") throw new APIError(done.err || "the operation failed", 0);
  if (done.status === "Cancelled") throw new APIError("the operation was cancelled", 0);
  return done;
}

// Paths of the objects the pages show; every segment is escaped.
const seg = encodeURIComponent;
export const paths = {
  deployments: () => "/1.0/deployments",
  deployment: (d) => `/1.0/deployments/${seg(d)}`,
  shape: (d, s) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}`,
  instances: (d, s) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/instances`,
  instance: (d, s, i) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/instances/${seg(i)}`,
  revisions: (d, s) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/revisions`,
  revision: (d, s, n) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/revisions/${n}`,
  rollouts: (d, s) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/rollouts`,
  rollout: (d, s, n) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/rollouts/${n}`,
  rollback: (d, s) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/rollback`,
  endpoints: (d, s) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/endpoints`,
  warmPool: (d, s) => `/1.0/deployments/${seg(d)}/shapes/${seg(s)}/warm-pool`,
  activity: (d, s) => `/1.0/deployments/${seg(d)}/activity` + (s ? `?shape=${seg(s)}` : ""),
  deliveries: (d) => `/1.0/deployments/${seg(d)}/webhook/deliveries`,
};

// canWrite is false for read-only sessions: they get no buttons (the daemon refuses their
// writes anyway).
export function canWrite() {
  return !!session.info && !session.info.read_only;
}
