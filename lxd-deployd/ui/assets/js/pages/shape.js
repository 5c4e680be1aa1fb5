import { get, paths } from "../api.js";
import { button, call, field, form } from "../actions.js";
import { sizeChart } from "../chart.js";
import { ago, badge, h, route, table, when } from "../dom.js";
import { bound, countList, counts, sizeBar } from "../shapes.js";
import { randomSuffix } from "./deployment.js";

// diffs remembers the last diff asked for, so that live re-renders keep showing it.
const diffs = {};

// fronted is whether the shape shown last has a front door, whose figures change without
// events: app.js then redraws the page every few seconds.
let fronted = false;

export function pollEvery() {
  return fronted ? 5000 : 0;
}

export async function render(dep, name) {
  const [s, instances, revisions, rollouts, activity] = await Promise.all([
    get(paths.shape(dep, name)),
    get(`${paths.instances(dep, name)}?recursion=1`),
    get(`${paths.revisions(dep, name)}?recursion=1`),
    get(`${paths.rollouts(dep, name)}?recursion=1`),
    get(paths.activity(dep, name)),
  ]);
  // Only a shape with traffic has endpoints (400 otherwise).
  fronted = !!s.traffic;
  // The rest of the page does not depend on the endpoints: a failure to read them is shown
  // in their place.
  let endpoints = null;
  let doorError = "";
  if (fronted) {
    try {
      endpoints = await get(paths.endpoints(dep, name));
    } catch (err) {
      doorError = `Cannot read the front door's endpoints: ${err.message}`;
    }
  }
  const f = bound(s);
  return h("div", {},
    h("p", { class: "crumbs" }, h("a", { href: route("deployments") }, "Deployments"), " / ",
      h("a", { href: route("deployments", dep) }, dep), " / ", name),
    h("h1", {}, `Shape ${name}`, " ", f ? badge(f.text, f.kind === "alert" ? "bad" : "warn") : null),
    s.description ? h("p", { class: "muted" }, s.description) : null,
    sizeBar(s),
    countList(s, counts(instances)),
    endpoints ? doorSummary(s, endpoints) : null,
    doorError ? h("p", { class: "msg error" }, doorError) : null,
    boundsForm(dep, s),
    h("h2", { id: "instances" }, "Instances"),
    form(`Launch an instance of ${name}`,
      field("launch-name", "New instance name", { name: "name", placeholder: `${name}-…`, autocomplete: "off" }),
      "Launch",
      (v) => call("POST", paths.instance(dep, name, v.name || `${name}-${randomSuffix()}`))),
    instanceTable(dep, name, instances, endpoints),
    h("h2", { id: "rollouts" }, "Rollouts"),
    rolloutSection(dep, name, s, rollouts),
    h("h2", { id: "revisions" }, "Revisions"),
    revisionSection(dep, name, s, revisions),
    h("h2", { id: "activity" }, "Activity"),
    h("p", { class: "muted" }, `Why ${name} has ${s.scaling_current} instance${s.scaling_current === 1 ? "" : "s"}: every scale change, revision and rollout step, newest first.`),
    sizeChart(s, activity),
    activityTable(activity));
}

function boundsForm(dep, s) {
  return form(`Change the bounds of ${s.name}`, [
    field("bound-min", "Minimum", { name: "min", type: "number", min: 0, value: s.scaling_minimum, required: true }),
    field("bound-max", "Maximum", { name: "max", type: "number", min: 0, value: s.scaling_maximum, required: true }),
  ], "Save bounds", (v) => call("PATCH", paths.shape(dep, s.name), {
    scaling_minimum: Number(v.min), scaling_maximum: Number(v.max),
  }));
}

// rate shows a request rate per second, as HAProxy counts it (over the last second).
function rate(r) {
  return `${Number.isInteger(r) ? r : r.toFixed(1)}/s`;
}

// doorSummary is the shape's front door at a glance: its request rate (the sum of its
// instances' at the door's last read) and how many instances serve, drain or wait.
function doorSummary(s, endpoints) {
  const n = { serving: 0, draining: 0, "not-ready": 0 };
  let total = 0;
  let measured = false;
  for (const e of endpoints) {
    n[e.state] = (n[e.state] || 0) + 1;
    if (e.traffic) {
      total += e.traffic.request_rate;
      measured = true;
    }
  }
  const item = (label, v, cls) => h("li", { class: cls }, `${label} `, h("b", {}, v));
  return h("ul", { class: "counts", id: "front-door", "aria-label": `${s.name} front door` },
    item("requests", measured ? rate(total) : "no figures"),
    item("serving", n.serving),
    item("draining", n.draining, n.draining ? "warn" : ""),
    item("not ready", n["not-ready"]),
    s.traffic.listen ? item("listens on", s.traffic.listen) : null);
}

function instanceTable(dep, shape, instances, endpoints) {
  const healthKind = { healthy: "ok", unhealthy: "bad" };
  const doorKind = { serving: "ok", draining: "warn" };
  const byName = new Map((endpoints || []).map((e) => [e.instance, e]));
  // The traffic columns only for a shape with a front door.
  const door = (i) => {
    if (!endpoints) return [];
    const e = byName.get(i.name);
    if (!e) return ["", ""];
    return [badge(e.state, doorKind[e.state]), e.traffic ? rate(e.traffic.request_rate) : ""];
  };
  const headers = ["Name", "Status", "Health", "Last check", "Revision", "Hook"];
  return table(`Instances of ${shape}`, [...headers, ...(endpoints ? ["Traffic", "Requests"] : []), ""],
    instances.sort((a, b) => a.name.localeCompare(b.name)).map((i) => [
      i.name,
      h("span", {}, i.status, i.state !== "created" ? h("span", { class: "muted" }, ` (${i.state})`) : null),
      badge(i.health || "unknown", healthKind[i.health]),
      i.health_check && i.health_check.output ? h("pre", { class: "output" }, i.health_check.output) : "",
      h("span", {}, String(i.revision), i.outdated ? [" ", badge("outdated", "warn")] : null),
      i.lifecycle ? h("span", {}, i.lifecycle, i.lifecycle_deadline ? [" until ", when(i.lifecycle_deadline)] : null) : "",
      ...door(i),
      button("Delete", `Delete instance ${i.name}`, () => call("DELETE", paths.instance(dep, shape, i.name)), { class: "secondary" }),
    ]), "No instances.");
}

function rolloutActions(dep, shape, r) {
  const act = (action, cls) => button(action[0].toUpperCase() + action.slice(1), `${action} rollout ${r.number}`,
    () => call("POST", `${paths.rollout(dep, shape, r.number)}/${action}`), { class: cls });
  if (r.status === "running" && r.phase === "wait-promote") return [act("promote"), act("abort", "danger"), act("cancel", "secondary")];
  if (r.status === "running") return [act("pause", "secondary"), act("abort", "danger"), act("cancel", "secondary")];
  if (r.status === "paused") return [act("resume"), act("abort", "danger"), act("cancel", "secondary")];
  return [];
}

function rolloutSection(dep, shape, s, rollouts) {
  const active = rollouts.find((r) => r.status === "running" || r.status === "paused");
  const start = active ? null : button("Start rollout", `Start a rollout of ${shape}`,
    () => call("POST", paths.rollouts(dep, shape), {}), { id: "start-rollout" });
  const progress = (r) => h("span", {},
    h("progress", { max: Math.max(r.size, 1), value: Math.min(r.updated, Math.max(r.size, 1)), "aria-label": `rollout ${r.number} progress` }),
    ` ${r.updated}/${r.size} replaced, ${r.ready} ready, ${r.outdated} outdated`);
  const statusKind = { complete: "ok", failed: "bad", running: "warn", paused: "warn", reverted: "bad" };
  return h("div", {},
    active
      ? h("div", { class: "card", "aria-label": `Rollout ${active.number} in progress` },
        h("p", {}, `Rollout ${active.number}: revision ${active.from_revision} → ${active.revision}, `,
          badge(active.status, "warn"), ` phase ${active.phase}`, active.reason ? `: ${active.reason}` : ""),
        progress(active), h("div", { class: "actions" }, rolloutActions(dep, shape, active)))
      : h("div", { class: "actions" }, start,
        h("span", { class: "muted" }, "A rollout replaces instances made from older revisions.")),
    table(`Rollouts of ${shape}, newest first`, ["#", "Status", "Revisions", "Progress", "Strategy", "Why", "Started"],
      rollouts.slice(0, 10).map((r) => [r.number, badge(r.status, statusKind[r.status]), `${r.from_revision} → ${r.revision}`,
        r === active ? progress(r) : r.finished_at ? h("span", {}, "finished ", when(r.finished_at)) : "", r.strategy.strategy || "rolling", r.reason || r.cause, when(r.created_at)]),
      "No rollouts yet."));
}

function revisionSection(dep, shape, s, revisions) {
  const key = `${dep}/${shape}`;
  const options = (id, selected) => h("select", { id, name: id },
    revisions.map((r) => h("option", { value: r.revision, selected: r.revision === selected }, `revision ${r.revision}`)));
  const latest = revisions.length ? revisions[0].revision : 0;
  const previous = revisions.length > 1 ? revisions[1].revision : latest;
  const diffForm = h("form", {
    class: "inline", "aria-label": "Compare two revisions",
    onsubmit: async (e) => {
      e.preventDefault();
      const from = e.target.querySelector("#diff-from").value;
      const to = e.target.querySelector("#diff-to").value;
      try {
        diffs[key] = await get(`${paths.revision(dep, shape, to)}?diff=${encodeURIComponent(from)}`);
      } catch (err) {
        diffs[key] = { error: err.message };
      }
      const out = document.getElementById("diff-result");
      out.replaceChildren(diffView(diffs[key]));
      out.focus();
    },
  },
  h("label", { for: "diff-from" }, "From", options("diff-from", previous)),
  h("label", { for: "diff-to" }, "To", options("diff-to", latest)),
  h("button", { type: "submit", class: "secondary" }, "Show diff"));
  return h("div", {},
    h("ol", { class: "timeline", "aria-label": `Revisions of ${shape}, newest first` },
      revisions.map((r) => h("li", { class: r.revision === s.revision ? "current" : "", dataset: { revision: r.revision } },
        h("b", {}, `Revision ${r.revision}`), r.revision === s.revision ? " (latest)" : "",
        ` · ${r.cause} · ${who(r.requestor)} · `, when(r.created_at),
        ` · ${r.instances} instance${r.instances === 1 ? "" : "s"}`,
        r.notes ? h("div", { class: "muted" }, r.notes) : null,
        r.revision !== s.revision
          ? button(`Roll back to ${r.revision}`, `Roll back ${shape} to revision ${r.revision}`,
            () => call("POST", paths.rollback(dep, shape), { revision: r.revision, template: true, scaling: false, notes: "from the web view" }),
            { class: "secondary" })
          : null))),
    revisions.length > 1 ? diffForm : null,
    h("div", { id: "diff-result", tabindex: "-1", "aria-live": "polite" }, diffs[key] ? diffView(diffs[key]) : null));
}

function diffView(diff) {
  if (diff.error) return h("p", { class: "msg error" }, diff.error);
  return table(`Changes from revision ${diff.from} to ${diff.to}`, ["Field", "Old", "New"],
    (diff.changes || []).map((c) => [h("code", {}, c.field), fmt(c.old), fmt(c.new)]), "The two revisions are the same.");
}

function fmt(v) {
  if (v === undefined || v === null) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

function who(r) {
  if (!r) return "";
  return r.username || r.name || r.protocol || "";
}

function activityTable(activity) {
  return table("Activity, newest first", ["When", "Action", "Change", "Who", "Why"],
    activity.slice().reverse().slice(0, 50).map((a) => [h("span", { title: a.time }, ago(a.time)), a.action,
      a.action.startsWith("scale") || a.action === "revision" ? `${a.from} → ${a.to}` : "", a.who, a.why]),
    "Nothing logged yet.");
}
