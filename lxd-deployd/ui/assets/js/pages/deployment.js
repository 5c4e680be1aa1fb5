import { get, paths } from "../api.js";
import { call, field, form } from "../actions.js";
import { badge, h, route, table, when } from "../dom.js";
import { bound, countList, counts, sizeBar } from "../shapes.js";

export async function render(name) {
  const d = await get(paths.deployment(name));
  const shapes = Object.values(d.deployment_shapes || {}).sort((a, b) => a.name.localeCompare(b.name));
  const lists = await Promise.all(shapes.map((s) => get(`${paths.instances(name, s.name)}?recursion=1`)));
  let deliveries = null;
  let deliveriesError = "";
  if (d.governor_webhook_url) {
    try {
      deliveries = await get(paths.deliveries(name));
    } catch (err) {
      deliveriesError = err.message;
    }
  }
  return h("div", {},
    h("p", { class: "crumbs" }, h("a", { href: route("deployments") }, "Deployments"), " / ", name),
    h("h1", {}, `Deployment ${name}`),
    d.description ? h("p", { class: "muted" }, d.description) : null,
    h("div", { class: "cards" }, shapes.map((s, i) => shapeCard(name, s, lists[i]))),
    (d.orphaned_instances || []).length
      ? h("p", { class: "msg error" }, `Orphaned instances (tagged with this deployment, not recorded): ${d.orphaned_instances.join(", ")}`)
      : null,
    h("h2", {}, "Governor webhook"),
    webhook(d, deliveries, deliveriesError));
}

function shapeCard(dep, s, instances) {
  const f = bound(s);
  const id = `launch-${s.name}`;
  return h("section", { class: `card ${f ? f.kind : ""}`, "aria-labelledby": `shape-${s.name}`, dataset: { shape: s.name } },
    h("h2", { id: `shape-${s.name}` }, h("a", { href: route("deployments", dep, "shapes", s.name) }, s.name), " ",
      f ? badge(f.text, f.kind === "alert" ? "bad" : "warn") : null),
    sizeBar(s),
    countList(s, counts(instances)),
    form(`Launch an instance of ${s.name}`,
      field(id, "New instance name", { name: "name", placeholder: `${s.name}-…`, autocomplete: "off", pattern: "[a-zA-Z0-9-]*" }),
      "Launch",
      (v) => call("POST", paths.instance(dep, s.name, v.name || `${s.name}-${randomSuffix()}`))));
}

export function randomSuffix() {
  const b = new Uint8Array(3);
  crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

// webhook shows where events go (scheme and host only: a URL may carry credentials) and
// how the last deliveries went. The secret is never fetched.
function webhook(d, deliveries, error) {
  if (!d.governor_webhook_url) return h("p", { class: "muted" }, "No webhook: this deployment's governor polls or uses its socket.");
  let target = "";
  try {
    const u = new URL(d.governor_webhook_url);
    target = `${u.protocol}//${u.host}`;
  } catch {
    target = "(unparsable URL)";
  }
  if (error) return h("div", {}, h("p", {}, `Events go to ${target}.`), h("p", { class: "muted" }, `Deliveries: ${error}`));
  const statusKind = { delivered: "ok", failed: "bad", pending: "warn" };
  return h("div", {},
    h("p", {}, `Events go to ${target}.`),
    table("Latest webhook deliveries, newest first", ["Type", "Status", "Attempts", "Last answer", "Queued"],
      deliveries.slice(0, 10).map((x) => [x.type, badge(x.status, statusKind[x.status]), x.attempts,
        x.last_error || (x.last_response_code ? `HTTP ${x.last_response_code}` : ""), when(x.created_at)]),
      "No deliveries yet."));
}
