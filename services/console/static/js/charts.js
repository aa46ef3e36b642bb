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
  const width = Math.max(320, rows.length * 28 + 60);
  const left = 52, bottom = 34, top = 12, right = 8;
  const plotH = height - top - bottom;
  const plotW = width - left - right;
  const max = Math.max(1, ...rows.map((r) => r.value));
  const step = plotW / Math.max(1, rows.length);
  const barW = Math.max(4, Math.min(40, step * 0.7));
  const labelEvery = Math.ceil(rows.length / Math.max(1, Math.floor(plotW / 46)));
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${title}: ${rows.length} bars, highest ${format(max)}${unit}`, preserveAspectRatio: "xMinYMin meet" },
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
    if (i % labelEvery === 0) {
      svg.append(s("text", { x: x + barW / 2, y: height - bottom + 14, "text-anchor": "middle" }, String(r.label).length > 12 ? String(r.label).slice(0, 11) + "…" : String(r.label)));
    }
  });
  return h("figure.chart-box", { testid, dataset: { bars: String(rows.length) } },
    h("div.scroll", {}, svg),
    h("figcaption", {}, title),
    h("details", {}, h("summary", {}, "Numbers"),
      h("table.grid", {}, h("tbody", {}, ...rows.map((r) => h("tr", {}, h("th", { scope: "row" }, r.label), h("td.num", {}, format(r.value) + unit)))))));
}
