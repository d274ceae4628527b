// Small SVG charts for the report view: scales, axes, a plot frame and a few chart kinds
// (horizontal bars, step curves, log-log scatter). No chart library: a few hundred lines draw
// what the view needs, and the widget module stays small enough to live in every saved notebook.
// Colours of data come from the caller (the payload's vocabulary); text, axes and grid follow
// the notebook theme through CSS (style.css, .ks-svg), so dark themes get no bright grid.
// What they draw: the payload's backends, roofline (kernelscope/analysis/roofline.py, sent by
// kernelscope/view/report.py) and occupancy curves (kernelscope/panels/shapes.py); where our
// front end does not run, kernelscope/render/charts.py draws backends and occupancy with altair.
//
// Building blocks, for new charts:
//   const p = plot(el, { width, height, x: { type: "log", domain, label, format }, y: {...} });
//   rects(p, items, { x0, x1, y0, y1, fill, tip })   dots(p, items, { x, y, r, fill, tip })
//   path(p, points, { step: true, cls })   label(p, x, y, text, { anchor, cls })
// Each chart returns the plot handle { svg, g, x, y, w, h } so callers can add marks.
// Chart kinds: barChart(el, rows, o) (horizontal bars), stepChart(el, o) (step curves with a
// marked point), scatterChart(el, o) (log-log or linear, lines under the dots); the report's own:
// backendChart, occupancyChart, rooflineChart at the end of this file.

import { h, fmtUs, fmtPct, fmtInt } from "./format.js";

const NS = "http://www.w3.org/2000/svg";

/** An SVG element; text goes in as textContent, never as markup. */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") el.textContent = v;
    else if (k === "class") el.setAttribute("class", v);
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) el.append(c);
  return el;
}

/** A hover tooltip (the browser's own, from an SVG <title>). */
function tip(el, text) {
  if (text) el.append(s("title", { text }));
  return el;
}

// -- scales ---------------------------------------------------------------------------------

/** Linear scale from domain [a, b] to range [r0, r1]; ticks at 1/2/5 steps. */
export function linear([a, b], [r0, r1]) {
  if (!(b > a)) {
    a -= 0.5;
    b += 0.5;
  }
  const f = (v) => r0 + ((v - a) / (b - a)) * (r1 - r0);
  f.domain = [a, b];
  f.ticks = (n = 5) => {
    const step = niceStep((b - a) / n);
    const out = [];
    for (let t = Math.ceil(a / step - 1e-9) * step; t <= b + step * 1e-9; t += step)
      out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    return out;
  };
  return f;
}

/** Log-10 scale (positive domain); ticks at each power of ten (every other one if crowded). */
export function log([a, b], [r0, r1]) {
  a = Math.max(a, 1e-300);
  if (!(b > a)) b = a * 10;
  const la = Math.log10(a),
    lb = Math.log10(b);
  const f = (v) => r0 + ((Math.log10(Math.max(v, 1e-300)) - la) / (lb - la)) * (r1 - r0);
  f.domain = [a, b];
  f.ticks = (n = 6) => {
    const lo = Math.ceil(la - 1e-9),
      hi = Math.floor(lb + 1e-9);
    const every = Math.max(1, Math.ceil((hi - lo + 1) / n));
    const out = [];
    for (let e = lo; e <= hi; e += every) out.push(10 ** e);
    return out;
  };
  return f;
}

/** Evenly spaced bands for categories; f(key) is the band's start, f.bandwidth its size. */
export function band(keys, [r0, r1], padding = 0.2) {
  const step = (r1 - r0) / Math.max(1, keys.length);
  const index = new Map(keys.map((k, i) => [k, i]));
  const f = (k) => r0 + index.get(k) * step + (step * padding) / 2;
  f.bandwidth = step * (1 - padding);
  f.domain = keys;
  return f;
}

function niceStep(x) {
  const p = 10 ** Math.floor(Math.log10(x || 1));
  const m = x / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

const SI = [
  [1e15, "P"],
  [1e12, "T"],
  [1e9, "G"],
  [1e6, "M"],
  [1e3, "k"],
];

/** 1.5k, 20M, 3T: a short number for axes and labels. */
export function si(v, digits = 3) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "-";
  const a = Math.abs(v);
  for (const [d, u] of SI) if (a >= d) return `${+(v / d).toPrecision(digits)}${u}`;
  if (a > 0 && a < 1e-2) return v.toExponential(0);
  return `${+v.toPrecision(digits)}`;
}

// -- frame, axes, marks ---------------------------------------------------------------------

/**
 * A plot area with axes in `el`. x/y: { type: "linear" | "log" | "band", domain, label, format,
 * ticks, grid }. Returns { svg, g, x, y, w, h } (g: the inner group, origin at the plot's corner).
 */
export function plot(el, { width = 420, height = 200, margin = {}, title, x, y, cls } = {}) {
  const m = { top: title ? 20 : 8, right: 12, bottom: x && x.label ? 34 : 22, left: 48, ...margin };
  const w = Math.max(10, width - m.left - m.right),
    h = Math.max(10, height - m.top - m.bottom);
  const svg = s("svg", {
    class: `ks-svg${cls ? ` ${cls}` : ""}`,
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
  });
  const g = s("g", { transform: `translate(${m.left},${m.top})` });
  svg.append(g);
  if (title) svg.append(s("text", { class: "ks-chart-title", x: m.left, y: 13, text: title }));
  const p = { svg, g, w, h, margin: m };
  p.x = x ? scale(x, [0, w]) : null;
  p.y = y ? scale(y, [h, 0]) : null;
  if (p.x && x.axis !== false) axis(p, "x", x);
  if (p.y && y.axis !== false) axis(p, "y", y);
  el.append(svg);
  return p;
}

function scale(spec, range) {
  if (spec.type === "band") return band(spec.domain, [Math.min(...range), Math.max(...range)], spec.padding);
  return (spec.type === "log" ? log : linear)(spec.domain, range);
}

/** An axis with ticks, labels and a faint grid across the plot. */
export function axis(p, which, spec = {}) {
  const sc = p[which];
  const fmt = spec.format || si;
  const g = s("g", { class: `ks-axis ks-axis-${which}` });
  const grid = s("g", { class: "ks-grid" });
  const isX = which === "x";
  if (sc.bandwidth !== undefined) {
    for (const k of sc.domain) {
      const c = sc(k) + sc.bandwidth / 2;
      g.append(
        isX
          ? s("text", { x: c, y: p.h + 14, "text-anchor": "middle", text: fmt(k) })
          : s("text", { x: -6, y: c + 3.5, "text-anchor": "end", text: fmt(k) })
      );
    }
  } else {
    for (const t of sc.ticks(spec.ticks)) {
      const v = sc(t);
      g.append(isX ? s("line", { x1: v, x2: v, y1: p.h, y2: p.h + 4 }) : s("line", { x1: -4, x2: 0, y1: v, y2: v }));
      g.append(
        isX
          ? s("text", { x: v, y: p.h + 14, "text-anchor": "middle", text: fmt(t) })
          : s("text", { x: -6, y: v + 3.5, "text-anchor": "end", text: fmt(t) })
      );
      if (spec.grid !== false)
        grid.append(isX ? s("line", { x1: v, x2: v, y1: 0, y2: p.h }) : s("line", { x1: 0, x2: p.w, y1: v, y2: v }));
    }
  }
  g.append(
    isX
      ? s("line", { class: "ks-domain", x1: 0, x2: p.w, y1: p.h, y2: p.h })
      : s("line", { class: "ks-domain", x1: 0, x2: 0, y1: 0, y2: p.h })
  );
  if (spec.label) {
    g.append(
      isX
        ? s("text", { class: "ks-axis-label", x: p.w / 2, y: p.h + 30, "text-anchor": "middle", text: spec.label })
        : s("text", {
            class: "ks-axis-label",
            transform: `translate(${-p.margin.left + 11},${p.h / 2}) rotate(-90)`,
            "text-anchor": "middle",
            text: spec.label,
          })
    );
  }
  p.g.prepend(grid);
  p.g.append(g);
  return g;
}

/** Rectangles from data: accessors give data coordinates (x0, x1, y0, y1) or pixels (px*). */
export function rects(p, items, o) {
  const g = s("g", { class: o.cls || "ks-rects" });
  for (const d of items) {
    const x0 = o.px0 ? o.px0(d) : p.x(o.x0(d)),
      x1 = o.px1 ? o.px1(d) : p.x(o.x1(d));
    const y0 = o.py0 ? o.py0(d) : p.y(o.y0(d)),
      y1 = o.py1 ? o.py1(d) : p.y(o.y1(d));
    g.append(
      tip(
        s("rect", {
          x: Math.min(x0, x1),
          y: Math.min(y0, y1),
          width: Math.max(1, Math.abs(x1 - x0)),
          height: Math.max(1, Math.abs(y1 - y0)),
          fill: o.fill ? o.fill(d) : null,
          "data-key": o.key ? o.key(d) : null,
        }),
        o.tip && o.tip(d)
      )
    );
  }
  p.g.append(g);
  return g;
}

/** Circles at (x(d), y(d)) in data coordinates, radius r(d) in pixels. */
export function dots(p, items, o) {
  const g = s("g", { class: o.cls || "ks-dots" });
  for (const d of items) {
    g.append(
      tip(
        s("circle", {
          cx: p.x(o.x(d)),
          cy: p.y(o.y(d)),
          r: o.r ? o.r(d) : 3,
          fill: o.fill ? o.fill(d) : null,
          "data-key": o.key ? o.key(d) : null,
        }),
        o.tip && o.tip(d)
      )
    );
  }
  p.g.append(g);
  return g;
}

/** A polyline through [x, y] data points; step: hold each y until the next x (step-after). */
export function path(p, points, { step = false, cls = "ks-line", tip: text } = {}) {
  let d = "";
  points.forEach(([x, y], i) => {
    const px = p.x(x),
      py = p.y(y);
    if (i === 0) d += `M${px},${py}`;
    else d += step ? `H${px}V${py}` : `L${px},${py}`;
  });
  const el = tip(s("path", { class: cls, d }), text);
  p.g.append(el);
  return el;
}

/** Text at pixel (x, y) of the plot area. */
export function label(p, x, y, text, { anchor = "start", cls = "ks-mark-label", rotate = 0 } = {}) {
  const el = s("text", {
    class: cls,
    x,
    y,
    "text-anchor": anchor,
    text,
    transform: rotate ? `rotate(${rotate},${x},${y})` : null,
  });
  p.g.append(el);
  return el;
}

// -- charts ---------------------------------------------------------------------------------

/**
 * Horizontal bars, one per row, largest first as given.
 * o: { label(row), value(row), color(row), text(row) (value label), tip(row), title, axisLabel, width, format }
 */
export function barChart(el, rows, o) {
  const keys = rows.map((_r, i) => i);
  const labels = rows.map(o.label);
  const left = Math.min(180, 12 + 6.2 * Math.max(4, ...labels.map((l) => String(l).length)));
  const max = Math.max(0, ...rows.map(o.value)) || 1;
  const p = plot(el, {
    width: o.width || 520,
    height: 30 + 22 * rows.length + (o.axisLabel ? 14 : 0),
    title: o.title,
    margin: { left, right: 110 },
    cls: "ks-bar-chart",
    x: { domain: [0, max], label: o.axisLabel, format: o.format, ticks: 4 },
    y: { type: "band", domain: keys, padding: 0.25, format: (i) => clip(labels[i], 28) },
  });
  rects(p, keys, {
    x0: () => 0,
    x1: (i) => o.value(rows[i]),
    py0: (i) => p.y(i),
    py1: (i) => p.y(i) + p.y.bandwidth,
    fill: (i) => o.color(rows[i]),
    tip: (i) => o.tip && o.tip(rows[i]),
    key: (i) => labels[i],
  });
  if (o.text)
    for (const i of keys) label(p, p.x(o.value(rows[i])) + 4, p.y(i) + p.y.bandwidth / 2 + 3.5, o.text(rows[i]));
  return p;
}

/**
 * Step curves (step-after) with one marked point, e.g. occupancy as a launch parameter varies.
 * o: { points: [[x, y]], marker: {x, y, tip}, xLabel, yDomain, yFormat, title, width, height }
 */
export function stepChart(el, o) {
  const pts = o.points.filter(([, y]) => y !== null && y !== undefined);
  const xs = pts.map(([x]) => x).concat(o.marker && o.marker.x !== undefined ? [o.marker.x] : []);
  const p = plot(el, {
    width: o.width || 260,
    height: o.height || 150,
    title: o.title,
    cls: "ks-step-chart",
    margin: { left: 40 },
    x: { domain: [Math.min(...xs), Math.max(...xs)], label: o.xLabel, ticks: 4 },
    y: { domain: o.yDomain || [0, 1], format: o.yFormat, ticks: 4 },
  });
  if (pts.length) path(p, pts, { step: true, cls: "ks-line ks-step" });
  if (o.marker && o.marker.y !== null && o.marker.y !== undefined) {
    dots(p, [o.marker], { x: (d) => d.x, y: (d) => d.y, r: () => 4.5, cls: "ks-marker", tip: () => o.marker.tip });
  }
  return p;
}

/**
 * Scatter on log-log (or linear) axes with line segments under it, e.g. a roofline.
 * o: { points, x(d), y(d), r(d), color(d), tip(d), xDomain, yDomain, xLabel, yLabel, xType, yType, title,
 *      lines: [{ points: [[x, y]], cls, tip }], labels: [{ x, y, text, anchor, dx, dy, rotate }] (data coords) }
 */
export function scatterChart(el, o) {
  const p = plot(el, {
    width: o.width || 560,
    height: o.height || 320,
    title: o.title,
    cls: "ks-scatter-chart",
    margin: { left: 54, right: 16 },
    x: { type: o.xType || "log", domain: o.xDomain, label: o.xLabel },
    y: { type: o.yType || "log", domain: o.yDomain, label: o.yLabel },
  });
  const clipId = `ks-clip-${Math.random().toString(36).slice(2, 9)}`;
  p.svg.prepend(s("defs", {}, s("clipPath", { id: clipId }, s("rect", { x: 0, y: 0, width: p.w, height: p.h }))));
  const under = s("g", { "clip-path": `url(#${clipId})` });
  p.g.append(under);
  for (const line of o.lines || []) {
    const sub = { ...p, g: under };
    path(sub, line.points, { cls: line.cls || "ks-line", tip: line.tip });
  }
  // Largest first, so small dots stay on top and reachable by the mouse.
  const order = [...o.points].sort((a, b) => (o.r ? o.r(b) - o.r(a) : 0));
  dots(p, order, { x: o.x, y: o.y, r: o.r, fill: o.color, tip: o.tip, key: o.key, cls: "ks-dots ks-scatter-dots" });
  for (const l of o.labels || []) {
    label(p, p.x(l.x) + (l.dx || 0), p.y(l.y) + (l.dy || 0), l.text, {
      anchor: l.anchor,
      cls: l.cls,
      rotate: l.rotate,
    });
  }
  return p;
}

/** The on-screen angle (degrees) of the segment between two data points, for labels along a line. */
export function angle(p, [x0, y0], [x1, y1]) {
  return (Math.atan2(p.y(y1) - p.y(y0), p.x(x1) - p.x(x0)) * 180) / Math.PI;
}

export function clip(text, n) {
  const t = String(text ?? "");
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

// -- the report's charts ----------------------------------------------------------------------

/** GPU time per backend (per device and backend when several devices), largest first. */
export function backendChart(el, backends, color, durationSource = "CUPTI") {
  // Bars for what ran on a GPU; the table beside lists CPU-side rows too.
  const rows = backends.filter((b) => b.gpu_time_us > 0).sort((a, b) => b.gpu_time_us - a.gpu_time_us);
  if (!rows.length) return null;
  const several = new Set(rows.map((b) => b.device)).size > 1;
  return barChart(el, rows, {
    label: (b) => (several ? `${b.device ?? "-"} · ${b.backend ?? "-"}` : (b.backend ?? "-")),
    value: (b) => (b.gpu_time_us || 0) / 1000,
    color: (b) => color(b.backend),
    text: (b) => `${fmtUs(b.gpu_time_us)} · ${fmtPct(b.share)}`,
    axisLabel: `GPU time (ms, ${durationSource})`,
    tip: (b) =>
      `${b.device ?? "-"} ${b.backend ?? "-"}: ${fmtInt(b.launches)} launches, ${fmtUs(b.gpu_time_us)}, `
      + `${fmtPct(b.share)} of GPU time${b.kernel_share != null ? `, ${fmtPct(b.kernel_share)} of kernel time` : ""}`,
  });
}

/** Nsight Compute-style occupancy graph: occupancy as one launch parameter varies; the launch marked. */
export function occupancyChart(el, points, current, { field, title }) {
  return stepChart(el, {
    points,
    title,
    xLabel: field,
    yFormat: (v) => `${Math.round(v * 100)}%`,
    marker: { x: current.x, y: current.y, tip: `this launch: ${field} ${current.x}, occupancy ${fmtPct(current.y)}` },
  });
}

/**
 * Roofline: achieved FLOP/s against arithmetic intensity on log-log axes, under each device's
 * memory and compute ceilings. Dot area follows the op's GPU time; the costliest few are named.
 * Ceiling labels (peak, bandwidth, their source) come with the payload.
 */
export function rooflineChart(el, roof, color, { named = 3 } = {}) {
  const pts = (roof.points || []).filter((p) => p.intensity > 0 && p.flops_per_s > 0);
  const ceilings = (roof.ceilings || []).filter((c) => c.peak_flops_per_s > 0 && c.bandwidth_bytes_per_s > 0);
  const ridge = (c) => c.peak_flops_per_s / c.bandwidth_bytes_per_s;
  const lo = Math.min(...pts.map((p) => p.intensity), ...ceilings.map((c) => ridge(c) / 100)) / 2;
  const hi = Math.max(...pts.map((p) => p.intensity), ...ceilings.map((c) => ridge(c) * 10)) * 2;
  const ylo = Math.min(...pts.map((p) => p.flops_per_s), ...ceilings.map((c) => c.bandwidth_bytes_per_s * lo)) / 2;
  const yhi = Math.max(...pts.map((p) => p.flops_per_s), ...ceilings.map((c) => c.peak_flops_per_s)) * 3;
  const tmax = Math.max(...pts.map((p) => p.duration_us || 0)) || 1;
  const radius = (p) => 2.5 + 9 * Math.sqrt((p.duration_us || 0) / tmax);
  const p = scatterChart(el, {
    points: pts,
    x: (d) => d.intensity,
    y: (d) => d.flops_per_s,
    r: radius,
    color: (d) => color(d.backend),
    key: (d) => d.name,
    tip: (d) =>
      [
        d.name,
        `${d.op ?? "-"} · ${d.backend ?? "-"} · ${d.precision ?? "-"}`,
        `${si(d.intensity)} FLOP/byte · ${si(d.flops_per_s)}FLOP/s · ${fmtUs(d.duration_us)}`,
        `${fmtPct(d.roof_share)} of attainable (${d.bound ?? "-"}-bound)`,
        d.count > 1 ? `${d.count.toLocaleString()} calls with this shape (time summed)` : null,
        d.note || null,
      ]
        .filter(Boolean)
        .join("\n"),
    // As wide as the panel allows (readable labels), within reason.
    xDomain: [lo, hi],
    yDomain: [ylo, yhi],
    width: Math.max(520, Math.min(900, el.clientWidth || 600)),
    height: 360,
    xLabel: roof.x_label || "arithmetic intensity (FLOP/byte, counted from op shapes)",
    yLabel: "achieved FLOP/s",
    lines: ceilings.map((c) => ({
      cls: "ks-line ks-roof",
      tip: c.peak_label || c.label,
      points: [
        [lo, c.bandwidth_bytes_per_s * lo],
        [ridge(c), c.peak_flops_per_s],
        [hi, c.peak_flops_per_s],
      ],
    })),
  });
  // Pixel positions of the dots, so that labels go where they hide none.
  const dotsPx = pts.map((d) => ({ x: p.x(d.intensity), y: p.y(d.flops_per_s), r: radius(d) }));
  const covered = (x0, y0, x1, y1) =>
    dotsPx.reduce((n, q) => n + (q.x + q.r > x0 && q.x - q.r < x1 && q.y + q.r > y0 && q.y - q.r < y1 ? 1 : 0), 0);
  const placed = []; // label boxes [x0, y0, x1, y1], which later labels keep clear of
  ceilingLabels(p, ceilings, [lo, hi], covered, placed);
  // The costliest point of each of the few costliest kernel names; labels pushed apart vertically.
  const top = [];
  for (const d of [...pts].sort((a, b) => (b.duration_us || 0) - (a.duration_us || 0))) {
    if (top.length >= named) break;
    if (!top.some((t) => t.name === d.name)) top.push(d);
  }
  for (const d of top) pointLabel(p, d, radius(d), covered, placed);
  const backends = [...new Set(pts.map((d) => d.backend))];
  el.append(
    h(
      "div",
      { class: "ks-legend" },
      backends.map((b) =>
        h(
          "span",
          { class: "ks-legend-item" },
          h("span", { class: "ks-swatch", style: `background:${color(b)}` }),
          b ?? "-"
        )
      ),
      ` · dot area: GPU time of the op's kernels; named: the ${top.length} costliest`
    )
  );
  return p;
}

// px per character at the roofline labels' 10px
const TEXT_W = 5.6;

/** Each ceiling's peak label at its right end, and its memory label along the memory slope where
 * it crosses the fewest dots (`covered(box)`); the boxes taken go into `placed`. */
function ceilingLabels(p, ceilings, [lo, hi], covered, placed) {
  const ridge = (c) => c.peak_flops_per_s / c.bandwidth_bytes_per_s;
  const seen = new Set();
  for (const c of ceilings) {
    const peak = c.peak_label || c.label || "peak",
      py = p.y(c.peak_flops_per_s) - 4;
    label(p, p.w - 2, py, peak, { anchor: "end", cls: "ks-roof-label" });
    placed.push([p.w - 2 - peak.length * TEXT_W, py - 9, p.w - 2, py + 2]);
    const mem = c.memory_label;
    if (!mem || seen.has(mem)) continue;
    seen.add(mem);
    // Along the memory slope, where it crosses the fewest dots (the slope from the left edge to the ridge).
    const la = Math.log10(lo),
      lr = Math.log10(Math.min(ridge(c), hi));
    const len = mem.length * TEXT_W;
    let best = null;
    for (const f of [0.08, 0.25, 0.4, 0.55]) {
      const x = 10 ** (la + f * (lr - la)),
        y = c.bandwidth_bytes_per_s * x;
      const px = p.x(x),
        py = p.y(y);
      if (px + len * 0.75 > p.w) continue;
      const n = covered(px, py - len * 0.7 - 12, px + len * 0.75, py + 4);
      if (!best || n < best.n) best = { x, y, n };
    }
    const at = best || { x: lo * 2.2, y: c.bandwidth_bytes_per_s * lo * 2.2 };
    label(p, p.x(at.x), p.y(at.y) - 5, mem, {
      cls: "ks-roof-label",
      rotate: angle(p, [at.x, at.y], [at.x * 10, at.y * 10]),
    });
  }
}

/** A point's name beside its dot (right, left, above or below), where it overlaps the fewest dots
 * and no other label (`placed`); a halo (style.css) keeps it legible over whatever it still crosses. */
function pointLabel(p, d, r, covered, placed) {
  const x = p.x(d.intensity),
    y = p.y(d.flops_per_s);
  const text = clip(d.name, 30),
    w = text.length * TEXT_W;
  // Beside the dot (right, left), or above / below it (centred, kept inside the plot).
  const cx = Math.max(w / 2, Math.min(p.w - w / 2, x));
  const options = [
    { x: x + r + 3, y: y + 3.5, anchor: "start", box: [x + r + 3, y - 6, x + r + 3 + w, y + 5] },
    { x: x - r - 3, y: y + 3.5, anchor: "end", box: [x - r - 3 - w, y - 6, x - r - 3, y + 5] },
    { x: cx, y: y + r + 11, anchor: "middle", box: [cx - w / 2, y + r + 1, cx + w / 2, y + r + 12] },
    { x: cx, y: y - r - 4, anchor: "middle", box: [cx - w / 2, y - r - 14, cx + w / 2, y - r - 3] },
    { x: cx, y: y + r + 23, anchor: "middle", box: [cx - w / 2, y + r + 13, cx + w / 2, y + r + 24] },
  ];
  const score = (o) => {
    const [x0, y0, x1, y1] = o.box;
    const out = x0 < 0 || x1 > p.w || y0 < 0 || y1 > p.h ? 100 : 0;
    const clash = placed.some((b) => b[0] < x1 && b[2] > x0 && b[1] < y1 && b[3] > y0) ? 50 : 0;
    return out + clash + covered(x0, y0, x1, y1);
  };
  const best = options.reduce((a, o) => (score(o) < score(a) ? o : a));
  placed.push(best.box);
  label(p, best.x, best.y, text, { cls: "ks-point-label", anchor: best.anchor });
}
