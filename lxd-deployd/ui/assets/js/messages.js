import { h } from "./dom.js";

// showError puts the API's message where screen readers announce it.
export function showError(context, err) {
  const box = document.getElementById("messages");
  const text = `${context}: ${err.message || err}`;
  box.append(h("div", { class: "msg error" }, h("span", {}, text),
    h("button", { type: "button", class: "secondary", onclick: (e) => e.target.closest(".msg").remove() }, "Dismiss")));
}

export function showInfo(text) {
  const box = document.getElementById("messages");
  const msg = h("div", { class: "msg info" }, h("span", {}, text));
  box.append(msg);
  setTimeout(() => msg.remove(), 6000);
}

export function clearMessages() {
  document.getElementById("messages").replaceChildren();
}
