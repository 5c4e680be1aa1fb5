import { view } from "./api.js";

// h builds an element: h("button", {class: "x", onclick: f}, "text", child...).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    // Styles go through the CSSOM: the Content-Security-Policy refuses style attributes.
    else if (key === "style") Object.assign(el.style, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// svg builds an SVG element.
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
  for (const child of children) {
    if (child === undefined || child === null) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// table builds an accessible table: a caption, header cells with scope, one row per item.
export function table(caption, headers, rows, empty) {
  if (rows.length === 0) return h("p", { class: "muted" }, empty || "None.");
  return h("div", { class: "table-wrap" },
    h("table", {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c) => h("td", {}, c))))),
    ));
}

export function badge(text, kind) {
  return h("span", { class: `badge ${kind || ""}` }, text);
}

export function when(t) {
  if (!t || t.startsWith("0001-")) return "";
  const d = new Date(t);
  return h("time", { datetime: d.toISOString(), title: d.toISOString() }, d.toLocaleString());
}

// ago says how long ago a time was, for lists.
export function ago(t) {
  const s = Math.round((Date.now() - new Date(t).getTime()) / 1000);
  if (s < 60) return `${Math.max(s, 0)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function link(href, text, label) {
  return h("a", { href, "aria-label": label }, text);
}

// route is the fragment of a page, keeping the project shown.
export function route(...segments) {
  const query = view.project === "default" ? "" : "?project=" + encodeURIComponent(view.project);
  return "#/" + segments.map(encodeURIComponent).join("/") + query;
}
