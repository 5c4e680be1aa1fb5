// The web view: a hash router over pages that read the REST API and re-render on every
// event of /1.0/events (doc/ui.md).
import { call, get, keepBinding, session, view } from "./api.js";
import { h } from "./dom.js";
import { connect, onEvent } from "./events.js";
import { clearMessages, showError } from "./messages.js";
import * as deployments from "./pages/deployments.js";
import * as deployment from "./pages/deployment.js";
import * as shape from "./pages/shape.js";
import * as cluster from "./pages/cluster.js";
import * as operations from "./pages/operations.js";

const routes = [
  [/^#\/deployments\/([^/]+)\/shapes\/([^/]+)$/, shape],
  [/^#\/deployments\/([^/]+)$/, deployment],
  [/^#\/cluster$/, cluster],
  [/^#\/operations$/, operations],
  [/^#\/deployments$/, deployments],
];

function match() {
  const [hash, query] = location.hash.split("?");
  view.project = new URLSearchParams(query || "").get("project") || "default";
  for (const [re, page] of routes) {
    const m = hash.match(re);
    if (m) return { page, params: m.slice(1).map(decodeURIComponent) };
  }
  return { page: deployments, params: [] };
}

let rendering = false;
let dirty = false;

// render builds the current page off screen and swaps it in, keeping focus and whatever
// the user was typing, so live updates do not get in the way of keyboard use.
export async function render(navigated, initial) {
  if (rendering) {
    dirty = true;
    return;
  }
  rendering = true;
  dirty = false;
  const main = document.getElementById("main");
  const { page, params } = match();
  let content;
  try {
    content = await page.render(...params);
  } catch (err) {
    content = h("div", {}, h("h1", {}, "Cannot show this page"), h("p", { class: "msg error" }, err.message));
  }
  const focusedId = document.activeElement && main.contains(document.activeElement) ? document.activeElement.id : "";
  const values = {};
  for (const el of main.querySelectorAll("input[id], select[id]")) {
    if (el.tagName === "SELECT" || el.value !== el.defaultValue) values[el.id] = el.value;
  }
  main.replaceChildren(content);
  if (!navigated) {
    for (const [id, value] of Object.entries(values)) {
      const el = document.getElementById(id);
      if (el && [...(el.options || [{ value }])].some((o) => o.value === value)) el.value = value;
    }
    if (focusedId) document.getElementById(focusedId)?.focus();
  } else {
    const heading = main.querySelector("h1");
    if (heading) document.title = `${heading.textContent} · lxd-deployd`;
    // After a navigation inside the page, focus goes to the new content, as after a page
    // load; on the first load it stays at the top, where the skip link is.
    if (!initial) main.focus({ preventScroll: true });
  }
  for (const a of document.querySelectorAll(".top nav a")) {
    const current = location.hash.split("?")[0].startsWith(a.getAttribute("href"));
    if (current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  rendering = false;
  // Figures that change without an event (a front door's request rate) are read again
  // while their page is shown: the page says how often.
  clearTimeout(pollTimer);
  const every = page.pollEvery ? page.pollEvery() : 0;
  if (every) pollTimer = setTimeout(() => render(false), every);
  if (dirty) render(false);
}

let pollTimer = null;

// refreshSoon redraws 150 ms after the first of a burst of events: a busy daemon's stream
// of events delays a redraw by that much at most, never indefinitely.
let timer = null;
function refreshSoon() {
  if (timer) return;
  timer = setTimeout(() => {
    timer = null;
    render(false);
  }, 150);
}

// signIn redeems a link's secret, which arrives in the URL's fragment (never sent to the
// daemon by the browser), then removes it from the address bar and history.
async function signIn() {
  const m = location.hash.match(/^#login=([A-Za-z0-9_-]+)$/);
  if (!m) return;
  history.replaceState(null, "", "/ui/#/deployments");
  try {
    session.info = await call("POST", "/ui/login", { token: m[1] });
    keepBinding(session.info.binding);
  } catch (err) {
    showError("Sign-in failed", err);
  }
}

function signInHelp(err) {
  return h("div", { class: "signin" },
    h("h1", {}, "Sign in"),
    h("p", { class: "msg error" }, err.message),
    h("p", {}, "Run ", h("code", {}, "lxd-deploy ui link"), " (add ", h("code", {}, "--read-only"),
      " for a view-only session) and open the URL it prints; each link works once. ",
      "A browser holding a client certificate of the trust store is signed in as that certificate."));
}

async function start() {
  // The skip link moves focus without touching the hash, which the router owns.
  document.querySelector(".skip").addEventListener("click", (e) => {
    e.preventDefault();
    document.getElementById("main").focus();
  });
  await signIn();
  if (!session.info) {
    try {
      session.info = await get("/ui/session");
    } catch (err) {
      document.getElementById("main").replaceChildren(signInHelp(err));
      document.getElementById("live").textContent = "signed out";
      return;
    }
  }
  const who = session.info;
  document.getElementById("identity").textContent =
    `${who.name || who.fingerprint.slice(0, 12)} (${who.certificate_type}${who.read_only ? ", read-only" : ""})`;
  document.body.classList.toggle("read-only", !!who.read_only);
  if (who.method === "link") {
    const out = document.getElementById("logout");
    out.hidden = false;
    out.addEventListener("click", async () => {
      try {
        await call("POST", "/ui/logout");
      } catch (err) {
        showError("Sign out", err);
        return;
      }
      keepBinding("");
      location.reload();
    });
  }
  if (!location.hash.startsWith("#/")) history.replaceState(null, "", "/ui/#/deployments");
  window.addEventListener("hashchange", () => {
    clearMessages();
    render(true);
  });
  onEvent(refreshSoon);
  connect();
  await render(true, true);
}

start();
