import { get } from "../api.js";
import { button, call } from "../actions.js";
import { badge, h, table, when } from "../dom.js";

export async function render() {
  const grouped = await get("/1.0/operations?recursion=1");
  const ops = Object.values(grouped || {}).flat().sort((a, b) => b.created_at.localeCompare(a.created_at));
  const kind = { Success: "ok", Failure: "bad", Running: "warn", Cancelled: "" };
  return h("div", {},
    h("h1", {}, "Operations"),
    h("p", { class: "muted" }, "Launches, deletes and rollouts in progress or finished in the last 5 minutes."),
    table("Operations, newest first", ["Description", "Status", "Resources", "Started", "Location", "Error", ""],
      ops.map((op) => [op.description, badge(op.status, kind[op.status]),
        Object.values(op.resources || {}).flat().join(" "), when(op.created_at), op.location, op.err,
        op.status === "Running" && op.may_cancel
          ? button("Cancel", `Cancel operation ${op.description}`, () => call("DELETE", `/1.0/operations/${encodeURIComponent(op.id)}`), { class: "secondary" })
          : ""]),
      "No operations."));
}
