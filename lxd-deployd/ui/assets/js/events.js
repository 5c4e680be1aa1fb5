// The /1.0/events websocket: every lifecycle, operation and endpoints event (an instance
// starting or stopping to serve behind a front door), reconnecting with backoff.
import { session } from "./api.js";

const listeners = new Set();
let delay = 500;

export function onEvent(f) {
  listeners.add(f);
}

export function connect() {
  const status = document.getElementById("live");
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  // A page cannot set headers on a websocket: the session's binding travels as a
  // subprotocol the daemon reads and never echoes (it answers "lxd-deployd").
  const protocols = session.binding ? ["lxd-deployd", `lxd-deployd.session.${session.binding}`] : [];
  const ws = new WebSocket(`${proto}//${location.host}/1.0/events?type=operation,lifecycle,endpoints&all-projects=true`, protocols);
  ws.onopen = () => {
    delay = 500;
    status.textContent = "live";
    status.classList.add("on");
  };
  ws.onmessage = (msg) => {
    let event;
    try {
      event = JSON.parse(msg.data);
    } catch {
      return;
    }
    for (const f of listeners) f(event);
  };
  ws.onclose = () => {
    status.textContent = "reconnecting";
    status.classList.remove("on");
    setTimeout(connect, delay);
    delay = Math.min(delay * 2, 10000);
  };
}
