// Buttons that call the API: each is a call the CLI can make too, and shows the API's own
// error when it fails. Read-only sessions get none of them.
import { call, canWrite, waitOperation } from "./api.js";
import { h } from "./dom.js";
import { showError, showInfo } from "./messages.js";

// button makes an action button, or nothing for a read-only session. run returns the
// API's answer; an operation is followed to its end.
export function button(text, label, run, opts = {}) {
  if (!canWrite()) return null;
  return h("button", {
    type: "button", class: opts.class, id: opts.id, "aria-label": label,
    onclick: async (e) => {
      const b = e.currentTarget;
      b.disabled = true;
      try {
        const answer = await run();
        if (answer && answer.id && answer.status) await waitOperation(answer);
        showInfo(`${label}: done`);
      } catch (err) {
        showError(label, err);
      } finally {
        b.disabled = false;
      }
    },
  }, text);
}

// form makes a small form whose submit calls the API, or nothing for a read-only session.
export function form(label, fields, submitText, run) {
  if (!canWrite()) return null;
  const el = h("form", {
    class: "inline", "aria-label": label,
    onsubmit: async (e) => {
      e.preventDefault();
      const submit = el.querySelector("button[type=submit]");
      submit.disabled = true;
      try {
        const values = Object.fromEntries(new FormData(el).entries());
        const answer = await run(values);
        if (answer && answer.id && answer.status) await waitOperation(answer);
        showInfo(`${label}: done`);
        // Clear what was typed, in the form now on the page (live updates may have
        // replaced this one meanwhile).
        for (const input of el.querySelectorAll("input[id]")) {
          const current = document.getElementById(input.id);
          if (current) current.value = current.defaultValue;
        }
      } catch (err) {
        showError(label, err);
      } finally {
        submit.disabled = false;
      }
    },
  }, fields, h("button", { type: "submit" }, submitText));
  return el;
}

// field is a labelled input.
export function field(id, labelText, attrs) {
  return h("label", { for: id }, labelText, h("input", { id, name: attrs.name || id, ...attrs }));
}

export { call };
