// Bar charts as inline SVG, written by hand: no library.  Each chart has a title and a
// text alternative, and its numbers in a table under a <details> for screen readers
// and for copying.

import { h, chips } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";

function s(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// rows: [{label, value, kind?: "alt" | "bad"}]; returns a <figure>.
export function barChart(rows, { title, unit = "", testid, height = 180, format = chips } = {}) {
  const max = Math.max(1, ...rows.map((r) => r.value));
  const left = Math.max(28, format(max).length * 7 + 10), bottom = 34, top = 12, right = 8;
  const labels = rows.map((r) => (String(r.label).length > 14 ? String(r.label).slice(0, 13) + "…" : String(r.label)));
  const labelPx = Math.max(0, ...labels.map((l) => l.length)) * 6.6 + 10;
  let step = Math.min(Math.max(labelPx, 16), 110);
  if (rows.length * step > 700) step = Math.max(14, 700 / rows.length);
  const labelEvery = Math.max(1, Math.ceil(labelPx / step));
  const width = left + right + Math.max(1, rows.length) * step;
  const plotH = height - top - bottom;
  const barW = Math.max(4, Math.min(40, step * 0.7));
  const svg = s("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `${title}: ${rows.length} bars, highest ${format(max)}${unit}` },
    s("title", {}, title),
    s("line", { class: "axis", x1: left, y1: top + plotH, x2: width - right, y2: top + plotH }),
    s("line", { class: "axis", x1: left, y1: top, x2: left, y2: top + plotH }),
    s("text", { x: left - 4, y: top + 4, "text-anchor": "end" }, format(max)),
    s("text", { x: left - 4, y: top + plotH, "text-anchor": "end" }, "0"));
  rows.forEach((r, i) => {
    const barH = (Math.max(0, r.value) / max) * plotH;
    const x = left + i * step + (step - barW) / 2;
    svg.append(s("rect", { class: `bar ${r.kind || ""}`, x, y: top + plotH - barH, width: barW, height: Math.max(barH, r.value > 0 ? 1 : 0) },
      s("title", {}, `${r.label}: ${format(r.value)}${unit}`)));
    if ((rows.length - 1 - i) % labelEvery === 0) {        // the last bar is always named
      svg.append(s("text", { x: x + barW / 2, y: height - bottom + 14, "text-anchor": "middle" }, labels[i]));
    }
  });
  return h("figure.chart-box", { testid, dataset: { bars: String(rows.length) } },
    h("div.scroll", {}, svg),
    h("figcaption", {}, title),
    h("details", {}, h("summary", {}, "Numbers"),
      h("table.grid", {}, h("tbody", {}, ...rows.map((r) => h("tr", {}, h("th", { scope: "row" }, r.label), h("td.num", {}, format(r.value) + unit)))))));
}
