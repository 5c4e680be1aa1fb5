import { get, paths, view } from "../api.js";
import { badge, h, route } from "../dom.js";
import { bound, counts, sizeBar } from "../shapes.js";

export async function render() {
  const list = await get(`${paths.deployments()}?recursion=1`);
  const cards = await Promise.all(list.map(card));
  return h("div", {},
    h("h1", {}, view.project === "default" ? "Deployments" : `Deployments in project ${view.project}`),
    projectForm(),
    list.length === 0
      ? h("p", { class: "muted" }, "No deployments yet: create one with lxd-deploy deployment create.")
      : h("div", { class: "cards" }, cards));
}

async function card(d) {
  const shapes = Object.values(d.deployment_shapes || {}).sort((a, b) => a.name.localeCompare(b.name));
  const lists = await Promise.all(shapes.map((s) => get(`${paths.instances(d.name, s.name)}?recursion=1`).catch(() => [])));
  const all = counts(lists.flat());
  const flags = shapes.map(bound).filter(Boolean);
  const kind = flags.some((f) => f.kind === "alert") || all.unhealthy ? "alert" : flags.length ? "edge" : "";
  return h("section", { class: `card ${kind}`, "aria-labelledby": `dep-${d.name}` },
    h("h2", { id: `dep-${d.name}` }, h("a", { href: route("deployments", d.name) }, d.name)),
    d.description ? h("p", { class: "muted" }, d.description) : null,
    h("p", {}, `${shapes.length} shape${shapes.length === 1 ? "" : "s"}, ${all.total} instance${all.total === 1 ? "" : "s"}: `,
      badge(`${all.ready} ready`, "ok"), " ",
      all.unhealthy ? badge(`${all.unhealthy} unhealthy`, "bad") : null, " ",
      all.outdated ? badge(`${all.outdated} outdated`, "warn") : null),
    shapes.map((s) => {
      const f = bound(s);
      return h("div", {},
        h("a", { href: route("deployments", d.name, "shapes", s.name) }, s.name), " ",
        f ? badge(f.text, f.kind === "alert" ? "bad" : "warn") : null,
        sizeBar(s));
    }));
}

// projectForm picks the LXD project whose deployments are shown; it only navigates.
function projectForm() {
  return h("form", {
    class: "inline", "aria-label": "Choose a project",
    onsubmit: (e) => {
      e.preventDefault();
      const project = e.target.querySelector("#project").value.trim() || "default";
      location.hash = project === "default" ? "#/deployments" : `#/deployments?project=${encodeURIComponent(project)}`;
    },
  },
  h("label", { for: "project" }, "LXD project", h("input", { id: "project", name: "project", value: view.project, autocomplete: "off" })),
  h("button", { type: "submit", class: "secondary" }, "Show"));
}
