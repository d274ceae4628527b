// The "Steps" tab: a training loop's steps (ProfilerStep#N), what they say in words, each step's
// time as a stacked bar of TensorBoard's breakdown, and the per-step table. Every label, colour,
// sentence and figure comes from the payload's `steps` (kernelscope/panels/steps.py, from
// kernelscope/analysis/steps.py); this module only lays them out. Recorded text only ever goes in
// as text (h() and textContent).
import { h, fmtInt, fmtUs, safeColor } from "./format.js";
import { sortTable } from "./sorttable.js";

const SVG = "http://www.w3.org/2000/svg";

/** Whether the report has steps (the tab shows only then). */
export function hasSteps(hd) {
  return !!(hd && hd.steps && (hd.steps.rows || []).length);
}

function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** Stacked bars, one per step, each part in its colour; a bar's title says its figures. */
function chart(st, opts) {
  const rows = st.rows;
  const parts = st.parts;
  const width = Math.max(320, Math.min(opts.width || 900, 900));
  const height = 180;
  const pad = 4;
  const max = Math.max(...rows.map((r) => r.step_us || 0), 1);
  const bw = Math.max(1, (width - 2 * pad) / rows.length);
  const el = svg("svg", { width, height, class: "ks-steps-chart", role: "img" });
  rows.forEach((r, i) => {
    const g = svg("g", { "data-step": r.index });
    let y = height;
    for (const p of parts) {
      const v = r[`${p.key}_us`] || 0;
      if (v <= 0) continue;
      const hgt = (v / max) * (height - pad);
      y -= hgt;
      g.append(svg("rect", { x: pad + i * bw, y, width: Math.max(bw - 1, 1), height: hgt, fill: safeColor(p.colour) }));
    }
    const title = svg("title", {});
    title.textContent =
      `${r.step}${r.kind ? ` (${r.kind})` : ""}: ${fmtUs(r.step_us)}\n`
      + parts
        .filter((p) => r[`${p.key}_us`] > 0)
        .map((p) => `${p.label} ${fmtUs(r[`${p.key}_us`])}`)
        .join("\n");
    g.append(title);
    if (opts.onPick) g.addEventListener("click", () => opts.onPick(r));
    el.append(g);
  });
  return el;
}

function legend(parts) {
  return h(
    "div",
    { class: "ks-legend" },
    parts.map((p) =>
      h(
        "span",
        { class: "ks-legend-item" },
        h("span", { class: "ks-swatch", style: `background:${safeColor(p.colour)}` }),
        p.label
      )
    )
  );
}

function table(st) {
  const parts = st.parts.filter((p) => st.rows.some((r) => r[`${p.key}_us`] > 0));
  const us = (key, label, title) => ({ key, label, title, num: true, text: (r) => fmtUs(r[key]) });
  const cols = [
    { key: "index", label: st.columns.step, num: true, search: true, text: (r) => r.step },
    { key: "kind", label: st.columns.kind, search: true, text: (r) => r.kind || "" },
    us("step_us", st.columns.step_us, st.note),
    us("gpu_busy_us", st.columns.gpu_busy_us),
    ...parts.map((p) => us(`${p.key}_us`, p.label)),
    { key: "kernels", label: st.columns.kernels, num: true, text: (r) => fmtInt(r.kernels) },
    { key: "allocations", label: st.columns.allocations, num: true, text: (r) => fmtInt(r.allocations) },
  ];
  return sortTable(st.rows, cols, { sort: "index", desc: false, cls: "ks-steps-table" }).el;
}

/** The tab's content. opts.onPick(row): a step clicked in the chart (the timeline shows it). */
export function stepsView(st, opts = {}) {
  const el = h("div", { class: "ks-steps" });
  el.append(
    h("h3", { text: `${st.title} (${st.source})` }),
    h(
      "ul",
      { class: "ks-steps-lines" },
      (st.lines || []).map((x) => h("li", { text: x }))
    ),
    chart(st, opts),
    legend(st.parts),
    table(st)
  );
  if (st.dropped_note) el.append(h("p", { class: "ks-note", text: st.dropped_note }));
  if (st.note) el.append(h("p", { class: "ks-note", text: st.note }));
  return el;
}
