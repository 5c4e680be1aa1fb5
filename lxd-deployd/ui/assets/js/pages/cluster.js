import { get } from "../api.js";
import { badge, h, table, when } from "../dom.js";

export async function render() {
  const [server, members] = await Promise.all([get("/1.0/cluster"), get("/1.0/cluster/members?recursion=1")]);
  return h("div", {},
    h("h1", {}, "Cluster members"),
    server.enabled ? null : h("p", { class: "muted" }, "This daemon is not clustered: it is its only member."),
    table("Cluster members", ["Name", "URL", "Database", "Role", "Status", "Last heartbeat"],
      members.map((m) => [m.server_name, m.url, m.database_address,
        `${m.database_role}${m.database_leader ? " (leader)" : ""}`,
        badge(m.status, m.status === "Online" ? "ok" : "bad"), when(m.last_heartbeat)]),
      "No members."));
}
