// A small chart of a shape's size over time, drawn from its activity log's scale changes.
import { h, svg } from "./dom.js";

export function sizeChart(shape, activity) {
  const steps = activity.filter((a) => a.action === "scale-up" || a.action === "scale-down");
  if (steps.length === 0) return h("p", { class: "muted" }, "No scale changes logged yet.");
  const points = [[new Date(steps[0].time).getTime(), steps[0].from]];
  for (const s of steps) points.push([new Date(s.time).getTime(), s.to]);
  points.push([Date.now(), shape.scaling_current]);
  const W = 600, H = 150, L = 28, R = 8, T = 8, B = 20;
  const t0 = points[0][0], t1 = Math.max(points[points.length - 1][0], t0 + 1000);
  const top = Math.max(shape.scaling_maximum, ...points.map((p) => p[1]), 1);
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (n) => T + (1 - n / top) * (H - T - B);
  let d = `M${x(points[0][0]).toFixed(1)},${y(points[0][1]).toFixed(1)}`;
  for (let i = 1; i < points.length; i++) {
    d += ` H${x(points[i][0]).toFixed(1)} V${y(points[i][1]).toFixed(1)}`;
  }
  const label = `Size of ${shape.name} over time: ${steps.length} scale changes from ${points[0][1]} to ${shape.scaling_current} instances`;
  const bound = (n, name) => [
    svg("line", { class: "bound", x1: L, x2: W - R, y1: y(n), y2: y(n) }),
    svg("text", { x: 2, y: y(n) + 3 }, `${name} ${n}`),
  ];
  return svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label },
    svg("title", {}, label),
    ...bound(shape.scaling_maximum, "max"),
    ...bound(shape.scaling_minimum, "min"),
    svg("path", { class: "line", d }),
    svg("text", { x: L, y: H - 5 }, new Date(t0).toLocaleTimeString()),
    svg("text", { x: W - R - 60, y: H - 5 }, "now"));
}
