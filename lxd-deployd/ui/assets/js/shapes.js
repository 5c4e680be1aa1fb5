// What the deployment and shape pages show of a shape: its size against its bounds, and
// the counts of its instances.
import { h } from "./dom.js";

// counts sums a shape's instances the way an operator asks about them.
export function counts(instances) {
  const c = { total: instances.length, ready: 0, outdated: 0, unhealthy: 0, hook: 0 };
  for (const i of instances) {
    if (i.state === "created" && i.status === "Running" && i.health !== "unhealthy") c.ready++;
    if (i.outdated) c.outdated++;
    if (i.health === "unhealthy") c.unhealthy++;
    if (i.lifecycle) c.hook++;
  }
  return c;
}

// bound says whether a shape is out of its bounds or at one of them.
export function bound(shape) {
  if (shape.status && shape.status !== "ok") return { kind: "alert", text: shape.status_reason || shape.status };
  if (shape.scaling_current >= shape.scaling_maximum) return { kind: "edge", text: "at maximum" };
  if (shape.scaling_minimum > 0 && shape.scaling_current <= shape.scaling_minimum) return { kind: "edge", text: "at minimum" };
  return null;
}

// sizeBar draws current against minimum and maximum; its label says the same in words.
export function sizeBar(shape) {
  const cur = shape.scaling_current;
  const min = shape.scaling_minimum;
  const max = shape.scaling_maximum;
  const scale = Math.max(max, cur, 1);
  const pct = (n) => `${(100 * n) / scale}%`;
  const out = cur < min || cur > max;
  const label = `${shape.name}: ${cur} instance${cur === 1 ? "" : "s"}, minimum ${min}, maximum ${max}`;
  return h("div", { class: "size" },
    h("div", { class: `bar${out ? " out" : ""}`, role: "img", "aria-label": label, dataset: { current: cur, min, max } },
      h("div", { class: "fill", style: { width: pct(cur) } }),
      h("div", { class: "range", style: { left: pct(min), width: `calc(${pct(max - min)} - 2px)` } })),
    h("div", { class: "bar-legend", "aria-hidden": "true" },
      h("span", {}, `min ${min}`), h("span", { class: "current" }, `${cur} now`), h("span", {}, `max ${max}`)));
}

export function countList(shape, c) {
  const item = (label, n, cls) => h("li", { class: cls }, `${label} `, h("b", {}, n));
  return h("ul", { class: "counts", "aria-label": `${shape.name} instance counts` },
    item("instances", c.total),
    item("ready", c.ready),
    item("outdated", c.outdated, c.outdated ? "warn" : ""),
    item("unhealthy", c.unhealthy, c.unhealthy ? "bad" : ""),
    item("in a hook", c.hook),
    shape.warm_pool ? item("warm pool", `${shape.warm_pool_ready || 0}/${shape.warm_pool.size}`) : null,
    item("revision", shape.revision));
}
