// The timeline: per host thread its CPU ops (nested, one level per call depth, record_function /
// NVTX-style annotations among them) and its CUDA API calls; per device/stream the kernels and
// copies; per device a lane that shows where that GPU was idle (gaps) and why. Canvas, drawn
// from the typed-array columns and culled by binary search, so 100k launches redraw on every
// wheel/drag event.
//
// Navigation as in Perfetto / Nsight Systems: the plain mouse wheel scrolls the page;
// ctrl/cmd+wheel (or a pinch) zooms at the pointer; shift+wheel or a sideways swipe pans;
// W/S zoom, A/D pan (the timeline has the keyboard once clicked); drag selects a time range
// (shift+drag or middle-drag pans); click a kernel to select it; Esc clears; F fits the range.
//
// API, for the report's other panels (the first screen's links to evidence, the kernel table):
//   timeline.showRange(t0, t1, { select = true })  zoom to [t0, t1] (us, the report's clock)
//       with a little margin, and, with select, make it the selected range (its summary shows)
//   timeline.highlight(names)   draw the launches of these kernels (full names) on top, the
//       others faded; [] or null clears
//   timeline.select(t0, t1)     select a range without moving the view; null clears
//   timeline.selection          { t0, t1, summary } of the selected range, or null
//   timeline.view               the [start, end] shown (us); timeline.draw() redraws
//   timeline.search(text)       find slices whose name matches the regex (case-insensitive; a
//       bad regex matches as plain text): timeline.matches [{ t, i }] by start, all outlined;
//       timeline.step(+1 | -1) shows the next / previous one and its properties
//   timeline.inspect({ t, i } | { gap }) the properties pane of a slice (what a click opens); null hides it
// Options: onPick(name, launch) a kernel clicked; onDraw(view, width) after every redraw (the
// utilization strip follows through it); onRange(launches, label) "show in the table" of a
// range; fill: an element whose height the lanes stretch to fill (a file tab); trace: the raw
// trace hand-off for "Perfetto" (perfetto.js).
import { h, fmtUs, fmtBytes, fmtInt, fmtPct, fmtNum, backendColor, causeColor, vocab, NEUTRAL } from "./format.js";
import { str, int } from "./data.js";
import { perfettoButton } from "./perfetto.js";
import { dims } from "./table.js";
import { sortTable } from "./sorttable.js";

const LANE_H = 18;
// One call-depth level of a thread's nested ops: thinner, so deep stacks leave room for the GPU.
const OP_LEVEL_H = 14;
// Exported: the utilization strip below the timeline shares this x mapping.
export const LABEL_W = 112;
const AXIS_H = 20;
// A slice this wide (CSS px) or more carries its name, truncated to fit.
const TEXT_MIN_W = 28;
// Colours of idle-gap causes (kernelscope.analysis.timeline.CAUSES), copies and host spans come
// from the payload's vocabulary (format.js: vocab).

function level() { return { items: [], maxEnd: null }; }

/** Lanes: items of each (device, stream) and each host thread, sorted by start; idle gaps per device. */
export function buildLanes(model) {
  const lanes = new Map();
  const ht = model.tables.host;
  const hostLanes = new Map();
  // Where each kernel and each host span is drawn (lane index), for the launch -> kernel link.
  const laneOf = { kernels: null, host: null, copies: null };
  if (ht) {
    const depth = ht.cols.depth;
    for (let i = 0; i < ht.rows; i++) {
      const tid = str(ht, "tid", i) || "?";
      const kind = str(ht, "kind", i);
      const isOp = kind === "op" || kind === "annotation";
      const key = `thread ${tid} ${isOp ? "ops" : "CUDA API"}`;
      if (!hostLanes.has(key)) hostLanes.set(key, { key, device: "host", stream: isOp ? 0 : 1, tid, host: true, levels: [] });
      const lane = hostLanes.get(key);
      const d = isOp && depth ? Math.max(0, depth[i]) : 0;
      while (lane.levels.length <= d) lane.levels.push(level());
      lane.levels[d].items.push({ t: "host", i, s: ht.cols.start_us[i], e: ht.cols.start_us[i] + ht.cols.duration_us[i] });
    }
  }
  const add = (tname) => {
    const t = model.tables[tname];
    if (!t) return;
    for (let i = 0; i < t.rows; i++) {
      const dev = str(t, "device", i) || "?";
      const stream = int(t, "stream", i);
      const key = `${dev} s${stream ?? "?"}`;
      if (!lanes.has(key)) lanes.set(key, { key, device: dev, stream: stream ?? -1, levels: [level()] });
      lanes.get(key).levels[0].items.push({ t: tname, i, s: t.cols.start_us[i], e: t.cols.start_us[i] + t.cols.duration_us[i] });
    }
  };
  add("kernels");
  add("copies");
  const byKey = (a, b) => (a.device < b.device ? -1 : a.device > b.device ? 1 : a.stream - b.stream);
  const host = [...hostLanes.values()].sort((a, b) => (a.tid < b.tid ? -1 : a.tid > b.tid ? 1 : a.stream - b.stream));
  const out = [...host, ...[...lanes.values()].sort(byKey)];
  let lo = Infinity, hi = -Infinity;
  const kt = model.tables.kernels;
  laneOf.kernels = new Int32Array(kt ? kt.rows : 0).fill(-1);
  laneOf.host = new Int32Array(ht ? ht.rows : 0).fill(-1);
  laneOf.copies = new Int32Array(model.tables.copies ? model.tables.copies.rows : 0).fill(-1);
  out.forEach((lane, li) => {
    for (const lv of lane.levels) {
      lv.items.sort((a, b) => a.s - b.s);
      // Running max of item ends, for culling items that start before the view but reach into it.
      let m = -Infinity;
      lv.maxEnd = new Float64Array(lv.items.length);
      lv.items.forEach((it, j) => {
        m = Math.max(m, it.e); lv.maxEnd[j] = m;
        laneOf[it.t][it.i] = li;
      });
      if (lv.items.length) { lo = Math.min(lo, lv.items[0].s); hi = Math.max(hi, m); }
    }
  });
  // Idle gaps and their causes come from the analysis (kernelscope.analysis.timeline).
  const gaps = [];
  const gt = model.tables.gaps;
  if (gt && gt.rows) {
    const byDev = new Map();
    for (let i = 0; i < gt.rows; i++) {
      const dev = str(gt, "device", i) || "?";
      if (!byDev.has(dev)) byDev.set(dev, []);
      byDev.get(dev).push({ s: gt.cols.start_us[i], e: gt.cols.start_us[i] + gt.cols.duration_us[i], i });
    }
    for (const [device, g] of byDev) gaps.push({ key: `${device} idle`, device, gaps: g.sort((a, b) => a.s - b.s) });
  }
  if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
  return { lanes: out, gaps, lo, hi, laneOf };
}

/** fn(item, time inside) for each item of a lane level that overlaps [t0, t1] (an instant
 * inside it counts; a span that only touches an end does not). */
function overlapping(lv, t0, t1, fn) {
  let j = lowerBound(lv.items, t0);
  while (j > 0 && lv.maxEnd[j - 1] >= t0) j--;
  for (; j < lv.items.length && lv.items[j].s <= t1; j++) {
    const it = lv.items[j];
    const d = Math.max(0, Math.min(it.e, t1) - Math.max(it.s, t0));
    if (it.e < t0 || (d <= 0 && it.e > it.s)) continue;
    fn(it, d);
  }
}

function lowerBound(items, x) {
  let a = 0, b = items.length;
  while (a < b) { const m = (a + b) >> 1; if (items[m].s < x) a = m + 1; else b = m; }
  return a;
}

/** Black or white, whichever reads better on a fill colour (#rgb / #rrggbb). */
const inkCache = new Map();
function ink(color) {
  if (!inkCache.has(color)) {
    let c = String(color || "").replace("#", "");
    if (c.length === 3) c = c.split("").map((x) => x + x).join("");
    const v = parseInt(c.slice(0, 6), 16);
    const lum = Number.isNaN(v) ? 0.5 : (0.2126 * ((v >> 16) & 255) + 0.7152 * ((v >> 8) & 255) + 0.0722 * (v & 255)) / 255;
    inkCache.set(color, lum > 0.55 ? "#111" : "#fff");
  }
  return inkCache.get(color);
}

export class Timeline {
  constructor(model, { onPick, onDraw, onRange, fill, trace } = {}) {
    this.model = model;
    this.onPick = onPick || (() => {});
    this.onDraw = onDraw || null;
    this.onRange = onRange || null;
    this.fill = fill || null;
    this.data = buildLanes(model);
    const pad = (this.data.hi - this.data.lo) * 0.01 || 1;
    // The margin never reaches before the report's zero (a long run's 1% is tens of ms).
    this.full = [Math.max(this.data.lo - pad, Math.min(this.data.lo, 0)), this.data.hi + pad];
    this.view = [...this.full];
    this.scale = 1;
    this.collapsed = new Set();
    this.hl = null;           // name codes of highlighted kernels
    this.hover = null;        // the item under the pointer
    this.selection = null;
    this._rows();
    this.canvas = h("canvas", { class: "ks-timeline-canvas" });
    // What follows the pointer (the launch link, a range being dragged) draws on a canvas of its
    // own above the lanes, so hovering 100k launches never redraws them.
    this.over = h("canvas", { class: "ks-timeline-overlay" });
    this.tip = h("div", { class: "ks-tip", style: "display:none" });
    const btn = (label, title, fn, cls = "") => h("button", { class: `ks-btn ${cls}`, text: label, title, onclick: fn });
    this.info = h("span", { class: "ks-timeline-info" });
    this.selBar = h("div", { class: "ks-timeline-selection", style: "display:none" });
    // A clicked slice's properties (Perfetto's / Nsight Systems' details panel).
    this.pane = h("div", { class: "ks-timeline-pane", style: "display:none" });
    this.matches = [];
    this.matchAt = -1;
    this.findInput = h("input", { class: "ks-filter ks-tl-find", type: "search", placeholder: "find slices (regex)…",
      "aria-label": "find slices by name (regex)", "data-lm-suppress-shortcuts": "true" });
    this.findInput.addEventListener("input", () => this.search(this.findInput.value));
    this.findInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); this.step(e.shiftKey ? -1 : 1); }
      e.stopPropagation();
    });
    this.findCount = h("span", { class: "ks-note ks-tl-find-count" });
    this.wrap = h("div", { class: "ks-timeline-wrap", tabindex: "0", "data-lm-suppress-shortcuts": "true",
      "aria-label": "timeline: W/S zoom, A/D pan, drag to select a range" }, this.canvas, this.over);
    this.el = h("div", { class: "ks-timeline" },
      h("div", { class: "ks-toolbar" },
        btn("+", "zoom in", () => this.zoom(0.5)), btn("−", "zoom out", () => this.zoom(2)),
        btn("reset", "show everything", () => { this.view = [...this.full]; this.draw(); }), this.info,
        perfettoButton(model.header, trace),
        this.findInput, btn("‹", "previous match (shift+Enter)", () => this.step(-1), "ks-tl-prev"),
        btn("›", "next match (Enter)", () => this.step(1), "ks-tl-next"), this.findCount,
        h("span", { class: "ks-hint", text: "ctrl+wheel, W/S: zoom · shift+wheel, A/D: pan · drag: select range · click: kernel" })),
      this.tip, this.wrap,
      // Below the lanes, so that a selection or a click never moves them.
      this.selBar, this.pane,
      legend(model));
    this._bind();
  }

  /** Rows top to bottom (lanes, then the idle lanes) with their y and height at this scale. */
  _rows() {
    const lh = Math.round(LANE_H * this.scale);
    let y = AXIS_H;
    this.rows = [];
    for (const lane of this.data.lanes) {
      const n = this.collapsed.has(lane.key) ? 1 : lane.levels.length;
      const label = lane.levels.length > 1 ? `${this.collapsed.has(lane.key) ? "▸" : "▾"} ${lane.key}` : lane.key;
      const llh = lane.levels.length > 1 ? Math.round(OP_LEVEL_H * this.scale) : lh;
      this.rows.push({ kind: "lane", lane, label: lane.key, text: label, levels: n, y, h: n * llh, lh: llh });
      y += n * llh;
    }
    for (const g of this.data.gaps) {
      this.rows.push({ kind: "gaps", g, label: g.key, text: g.key, levels: 1, y, h: lh, lh });
      y += lh;
    }
    this.contentH = y;
  }

  zoom(factor, center) {
    const [a, b] = this.view;
    const c = center ?? (a + b) / 2;
    const span = Math.max((b - a) * factor, 1e-3);
    const f = (c - a) / (b - a || 1);
    this.view = [c - span * f, c - span * f + span];
    this.draw();
  }

  pan(fraction) {
    const span = this.view[1] - this.view[0];
    this.view = [this.view[0] + span * fraction, this.view[1] + span * fraction];
    this.draw();
  }

  showRange(t0, t1, { select = true } = {}) {
    const a = Math.min(t0, t1), b = Math.max(t0, t1);
    const pad = (b - a) * 0.05 || 1;
    this.view = [a - pad, b + pad];
    if (select) this.select(a, b); else this.draw();
  }

  select(t0, t1) {
    if (t0 === null || t0 === undefined) {
      this.selection = null;
      this.selBar.style.display = "none";
    } else {
      const a = Math.min(t0, t1), b = Math.max(t0, t1);
      this.selection = { t0: a, t1: b, summary: this.summarize(a, b) };
      this._selBar();
    }
    this.draw();
  }

  highlight(names) {
    const codes = new Set();
    const strings = this.model.tables.kernels.strings.name || [];
    for (const n of names || []) { const c = strings.indexOf(n); if (c >= 0) codes.add(c); }
    this.hl = codes.size ? codes : null;
    this.draw();
  }

  /** Find slices (kernels by full or readable name, copies, host spans) whose name matches. */
  search(text) {
    const q = String(text || "").trim();
    this.query = q;
    this.matches = [];
    this.matchAt = -1;
    if (q) {
      let re;
      try { re = new RegExp(q, "i"); } catch { re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i"); }
      const m = this.model;
      for (const t of ["kernels", "copies", "host"]) {
        const tab = m.tables[t];
        if (!tab || !tab.cols.name) continue;
        // Each distinct name is tested once; kernels also by their readable name.
        const hit = (tab.strings.name || []).map((n, c) => re.test(n) || (t === "kernels" && re.test(m.header.names[c] || "")));
        const col = tab.cols.name;
        for (let i = 0; i < tab.rows; i++) if (col[i] >= 0 && hit[col[i]]) this.matches.push({ t, i, s: tab.cols.start_us[i] });
      }
      this.matches.sort((a, b) => a.s - b.s);
    }
    this._findStatus();
    this._drawOverlay();
    return this.matches.length;
  }

  /** Show the next (+1) or previous (-1) match (centred when out of view), its properties open. */
  step(dir = 1) {
    const n = this.matches.length;
    if (!n) return null;
    this.matchAt = ((this.matchAt < 0 && dir < 0 ? 0 : this.matchAt + dir) % n + n) % n;
    const it = this.matches[this.matchAt];
    const tab = this.model.tables[it.t];
    const s = tab.cols.start_us[it.i], e = s + tab.cols.duration_us[it.i];
    let span = this.view[1] - this.view[0];
    if (s < this.view[0] || e > this.view[1]) {
      if (span < (e - s) * 1.25) span = (e - s) * 1.25 || span;
      const c = (s + e) / 2;
      this.view = [c - span / 2, c + span / 2];
    }
    this.draw();
    this.inspect(it);
    this._findStatus();
    return it;
  }

  _findStatus() {
    const n = this.matches.length;
    this.findCount.textContent = !this.query ? "" : n ? `${this.matchAt >= 0 ? `${fmtInt(this.matchAt + 1)} of ` : ""}${plural(n, "match", "matches")}` : "no match";
  }

  /** Outline every match in view (and the current one thicker). */
  _drawMatches(ctx, color) {
    if (!this.matches.length) return;
    const [a, b] = this.view;
    ctx.strokeStyle = color;
    let n = 0;
    const cur = this.matches[this.matchAt];
    for (const it of this.matches) {
      if (n > 5000) break;
      const tab = this.model.tables[it.t];
      const s = tab.cols.start_us[it.i];
      if (s > b) break;
      if (s + tab.cols.duration_us[it.i] < a) continue;
      const box = this._box(it.t, it.i);
      if (!box) continue;
      ctx.lineWidth = it === cur ? 3 : 1.5;
      const x0 = Math.max(LABEL_W, box.x0), x1 = Math.min(this.width, Math.max(box.x1, box.x0 + 2));
      ctx.strokeRect(x0 - 1, box.y + 1, x1 - x0 + 2, box.lh - 2);
      n++;
    }
    ctx.lineWidth = 1;
  }

  /** The properties pane of a slice ({ t, i }) or an idle gap ({ gap }); null hides it. */
  inspect(it) {
    this.inspected = it || null;
    const pane = this.pane;
    pane.textContent = "";
    if (!it) { pane.style.display = "none"; return; }
    const rows = this._properties(it);
    pane.append(h("div", { class: "ks-tl-pane-head" }, h("b", { text: rows.title }),
      h("button", { class: "ks-btn ks-tl-pane-close", text: "×", title: "close (Esc)", onclick: () => this.inspect(null) })),
    // Short fields side by side in columns; names, stacks and sources across the pane.
    h("div", { class: "ks-tl-props" }, rows.rows.filter((r) => r[1] !== null && r[1] !== undefined && r[1] !== "")
      .map(([k, v]) => h("div", { class: `ks-tl-prop${String(v).length > 40 ? " ks-tl-wide" : ""}`, "data-prop": k },
        h("span", { class: "ks-tl-k", text: k }), h("span", { class: "ks-tl-v", text: v })))));
    pane.style.display = "";
  }

  /** What the pane lists: every field the payload holds for the slice. */
  _properties(it) {
    const m = this.model;
    const ht = m.tables.host;
    if (it.gap) {
      const gt = m.tables.gaps, i = it.gap.i, cause = str(gt, "cause", i);
      return { title: `GPU idle ${fmtUs(it.gap.e - it.gap.s)}`, rows: [
        ["device", str(gt, "device", i)], ["start", fmtUs(it.gap.s)], ["duration", fmtUs(it.gap.e - it.gap.s)],
        ["cause", (vocab("causes")[cause] || {}).text || cause], ["next op", str(gt, "after_op", i)],
        ["host blocked in", str(gt, "blocking_call", i)]] };
    }
    const t = m.tables[it.t], i = it.i;
    const num = (c, f) => (t.cols[c] && !Number.isNaN(t.cols[c][i]) ? f(t.cols[c][i]) : null);
    const base = [["start", fmtUs(t.cols.start_us[i])], ["duration", fmtUs(t.cols.duration_us[i])]];
    if (it.t === "host") {
      const k = this._linked(it);
      const kt = m.tables.kernels;
      return { title: str(t, "name", i) || "?", rows: [["kind", str(t, "kind", i)], ["thread", str(t, "tid", i)], ...base,
        ["depth", num("depth", String)], ["correlation id", num("correlation", (v) => (v > 0 ? String(v) : null))],
        ["launched", k.length ? `${m.header.names[kt.cols.name[k[0]]] || str(kt, "name", k[0])}${k.length > 1 ? ` and ${fmtInt(k.length - 1)} more` : ""}` : null],
        ["call stack", this._stack(str(t, "tid", i), t.cols.start_us[i], i)]] };
    }
    if (it.t === "copies") {
      return { title: str(t, "name", i) || "copy", rows: [["kind", str(t, "kind", i)], ["direction", str(t, "copy_kind", i)],
        ["device / stream", `${str(t, "device", i) || "-"} / ${int(t, "stream", i) ?? "-"}`], ...base,
        ["bytes", num("bytes", fmtBytes)], ["bandwidth", num("bandwidth_gbps", (v) => `${fmtNum(v, 1)} GB/s`)],
        ["memory", [str(t, "src_memory", i), str(t, "dst_memory", i)].filter(Boolean).join(" → ") || null], ["CPU op", str(t, "op", i)]] };
    }
    const call = this._linked(it)[0];
    const occ = num("theoretical_occupancy", (v) => v);
    const lim = str(t, "occupancy_limiter", i);
    const pct = (c) => num(c, (v) => `${fmtNum(v, 0)}%`);
    return { title: this._name(it), rows: [["name", str(t, "name", i)], ["backend", str(t, "backend", i)],
      ["device / stream", `${str(t, "device", i) || "-"} / ${int(t, "stream", i) ?? "-"}`], ...base,
      ["grid", dims(t, "grid", i)], ["block", dims(t, "block", i)],
      ["registers / thread", int(t, "registers_per_thread", i) === null ? null : String(int(t, "registers_per_thread", i))],
      ["shared memory / block", int(t, "shared_mem_bytes", i) === null ? null : fmtBytes(int(t, "shared_mem_bytes", i))],
      ["theoretical occupancy", occ === null ? null : `${fmtPct(occ, 0)}${lim ? ` (limited by ${lim})` : ""}`],
      ["waves", num("waves", (v) => fmtNum(v, 2))],
      ["correlation id", num("correlation", (v) => (v > 0 ? String(v) : null))],
      ["launched by", call === undefined ? null : `${str(ht, "name", call)} at ${fmtUs(ht.cols.start_us[call])} (${fmtUs(t.cols.start_us[i] - ht.cols.start_us[call])} before the start)`],
      ["CPU op", str(t, "op", i)],
      ["call stack", call === undefined ? null : this._stack(str(ht, "tid", call), ht.cols.start_us[call], call)],
      ["source", str(t, "source", i)],
      ["SMs active", pct("sm_active_pct")], ["tensor pipes", pct("tensor_pct")], ["DRAM", pct("dram_pct")],
      ["DRAM bandwidth", num("dram_gbps", (v) => `${fmtNum(v, 1)} GB/s`)], ["top stall", t.cols.top_stall ? str(t, "top_stall", i) : null]] };
  }

  /** The CPU ops of thread `tid` open at time `at` (outermost first), as "a › b › c". */
  _stack(tid, at, self) {
    const ht = this.model.tables.host;
    if (!ht) return null;
    const open = [];
    for (let j = 0; j < ht.rows; j++) {
      if (j === self) continue;
      const kind = str(ht, "kind", j);
      if (kind !== "op" && kind !== "annotation") continue;
      const s = ht.cols.start_us[j];
      if (s <= at && at <= s + ht.cols.duration_us[j] && str(ht, "tid", j) === tid) open.push([ht.cols.depth ? ht.cols.depth[j] : 0, s, j]);
    }
    open.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    return open.length ? open.map((o) => str(ht, "name", o[2])).join(" › ") : null;
  }

  _x2t(x) { const w = this.width - LABEL_W; return this.view[0] + ((x - LABEL_W) / w) * (this.view[1] - this.view[0]); }
  _t2x(t) { return LABEL_W + ((t - this.view[0]) / (this.view[1] - this.view[0])) * (this.width - LABEL_W); }

  _bind() {
    const c = this.canvas;
    const pos = (e) => { const r = c.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    c.addEventListener("wheel", (e) => {
      const [x] = pos(e);
      if (e.ctrlKey || e.metaKey) {
        // ctrl/cmd+wheel, and a trackpad pinch (which Chrome sends as ctrl+wheel): zoom.
        e.preventDefault();
        this.zoom(Math.exp(Math.max(-1, Math.min(1, e.deltaY * 0.0025))), this._x2t(Math.max(LABEL_W, x)));
      } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        // shift+wheel (some systems turn it into deltaX) or a sideways swipe: pan.
        e.preventDefault();
        const d = Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : e.deltaY;
        this.pan(d / Math.max(1, this.width - LABEL_W));
      }
      // The plain wheel scrolls the page (the notebook), as everywhere else.
    }, { passive: false });
    let drag = null;
    // While a drag lasts the window reports the pointer (it may leave the canvas).
    const move = (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x0;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (!drag.moved) return;
      if (drag.mode === "pan") {
        const dt = (dx / (this.width - LABEL_W)) * (drag.view[1] - drag.view[0]);
        this.view = [drag.view[0] - dt, drag.view[1] - dt];
        this.draw();
      } else if (drag.mode === "select") {
        const [x] = pos(e);
        const t = this._x2t(Math.max(LABEL_W, Math.min(this.width, x)));
        this.selection = { t0: Math.min(drag.t0, t), t1: Math.max(drag.t0, t), summary: null, dragging: true };
        this._drawOverlay();
      }
    };
    const up = () => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      if (!drag) return;
      const d = drag;
      drag = null;
      if (!d.moved) this._click(d.x, d.y);
      else if (d.mode === "select" && this.selection) this.select(this.selection.t0, this.selection.t1);
    };
    c.addEventListener("mousedown", (e) => {
      if (e.button !== 0 && e.button !== 1) return;
      e.preventDefault();
      this.wrap.focus({ preventScroll: true });
      const [x, y] = pos(e);
      const mode = x < LABEL_W ? "label" : e.shiftKey || e.button === 1 ? "pan" : "select";
      drag = { x0: e.clientX, x, y, t0: this._x2t(x), view: [...this.view], mode, moved: false };
      window.addEventListener("mousemove", move);
      window.addEventListener("mouseup", up);
    });
    c.addEventListener("mousemove", (e) => { if (!drag || !drag.moved) this._hover(...pos(e)); });
    c.addEventListener("mouseleave", () => {
      this.tip.style.display = "none";
      if (this.hover) { this.hover = null; this._drawOverlay(); }
      this._lastPos = null;
    });
    c.addEventListener("dblclick", () => { this.view = [...this.full]; this.draw(); });
    this.wrap.addEventListener("keydown", (e) => this._key(e));
    this._lastPos = null;
    // The canvas follows its container (a sidebar toggled, the window resized, a file tab's height).
    if (typeof ResizeObserver !== "undefined") {
      this.ro = new ResizeObserver(() => {
        if (!this.wrap.isConnected || !this.wrap.clientWidth) return;
        if (this.wrap.clientWidth !== this.width || (this.fill && this._fillScale() !== this.scale)) this.draw();
      });
      this.ro.observe(this.wrap);
      if (this.fill) this.ro.observe(this.fill);
    }
  }

  _key(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.toLowerCase();
    const at = this._lastPos ? this._x2t(Math.max(LABEL_W, this._lastPos[0])) : undefined;
    const fast = e.shiftKey ? 2.5 : 1;
    if (k === "w") this.zoom(1 / (1 + 0.25 * fast), at);
    else if (k === "s") this.zoom(1 + 0.25 * fast, at);
    else if (k === "a") this.pan(-0.1 * fast);
    else if (k === "d") this.pan(0.1 * fast);
    else if (k === "f" && this.selection) this.showRange(this.selection.t0, this.selection.t1, { select: false });
    else if (k === "escape") { this.select(null); this.highlight(null); this.inspect(null); }
    else return;
    // Handled here: not a notebook shortcut (A would insert a cell, D D delete one).
    e.preventDefault();
    e.stopPropagation();
  }

  /** The row and level at canvas y, or null. */
  _rowAt(y) {
    for (let r = 0; r < this.rows.length; r++) {
      const row = this.rows[r];
      if (y >= row.y && y < row.y + row.h) return { row, r, lv: Math.floor((y - row.y) / row.lh) };
    }
    return null;
  }

  _at(x, y) {
    const hit = this._rowAt(y);
    if (!hit || x < LABEL_W) return null;
    const { row } = hit;
    const t = this._x2t(x);
    const tol = ((this.view[1] - this.view[0]) / (this.width - LABEL_W)) * 2;
    if (row.kind === "gaps") {
      const g = row.g.gaps.find((q) => q.s - tol <= t && t <= q.e + tol);
      return g ? { gap: g, row } : null;
    }
    const lv = row.lane.levels[Math.min(hit.lv, row.levels - 1)];
    if (!lv) return null;
    const items = lv.items;
    let best = null;
    let j = lowerBound(items, t + tol) - 1;
    for (; j >= 0 && lv.maxEnd[j] >= t - tol; j--) {
      const it = items[j];
      if (it.e >= t - tol && (!best || (it.s <= t && t <= it.e))) { best = it; if (it.s <= t && t <= it.e) break; }
    }
    return best ? { item: best, row } : null;
  }

  _name(it) {
    const t = this.model.tables[it.t];
    if (it.t === "kernels") return this.model.header.names[t.cols.name[it.i]] || str(t, "name", it.i) || "";
    return str(t, "name", it.i) || (it.t === "copies" ? "copy" : "");
  }

  _hover(x, y) {
    this._lastPos = [x, y];
    const hit = this._at(x, y);
    const item = hit && hit.item ? hit.item : null;
    if ((item && (!this.hover || this.hover.i !== item.i || this.hover.t !== item.t)) || (!item && this.hover)) {
      this.hover = item;
      this._drawOverlay();
    }
    if (!hit) { this.tip.style.display = "none"; return; }
    this.tip.textContent = "";
    const lines = [];
    if (hit.gap) {
      const gt = this.model.tables.gaps;
      const cause = str(gt, "cause", hit.gap.i);
      const after = str(gt, "after_op", hit.gap.i);
      const call = str(gt, "blocking_call", hit.gap.i);
      lines.push(`GPU idle ${fmtUs(hit.gap.e - hit.gap.s)} (${cause || "cause unknown"})`,
        `from ${fmtUs(hit.gap.s)} to ${fmtUs(hit.gap.e)}`);
      if (after) lines.push(`next: ${after}`);
      if (call) lines.push(`host blocked in ${call}`);
    } else {
      const it = hit.item;
      const t = this.model.tables[it.t];
      if (it.t === "host") {
        const kind = str(t, "kind", it.i);
        lines.push(str(t, "name", it.i) || "?", `${fmtUs(t.cols.duration_us[it.i])} at ${fmtUs(t.cols.start_us[it.i])}`
          + (kind === "annotation" ? " · annotation (record_function)" : kind === "sync" ? " · the host waits here" : ""));
        const k = this._linked(it);
        if (k.length) {
          const kt = this.model.tables.kernels;
          lines.push(`launched: ${this.model.header.names[kt.cols.name[k[0]]] || str(kt, "name", k[0])}`
            + ` (${fmtUs(kt.cols.duration_us[k[0]])}, starts ${fmtUs(kt.cols.start_us[k[0]] - t.cols.start_us[it.i])} after the call)`);
        }
      } else if (it.t === "kernels") {
        lines.push(this._name(it),
          `${str(t, "backend", it.i) || "-"} · ${fmtUs(t.cols.duration_us[it.i])} at ${fmtUs(t.cols.start_us[it.i])}`,
          `op: ${str(t, "op", it.i) || "-"}`);
        const r = this._linked(it);
        if (r.length) {
          const ht = this.model.tables.host;
          lines.push(`launched by ${str(ht, "name", r[0])} at ${fmtUs(ht.cols.start_us[r[0]])}: `
            + `${fmtUs(t.cols.start_us[it.i] - ht.cols.start_us[r[0]])} from launch to start`);
        }
      } else {
        lines.push(str(t, "name", it.i) || "copy",
          `${fmtBytes(t.cols.bytes[it.i])} · ${fmtUs(t.cols.duration_us[it.i])} · ${fmtNum(t.cols.bandwidth_gbps[it.i], 1)} GB/s`);
      }
      if (t.cols.sm_active_pct && !Number.isNaN(t.cols.sm_active_pct[it.i])) {
        const p = (c) => (t.cols[c] && !Number.isNaN(t.cols[c][it.i]) ? `${fmtNum(t.cols[c][it.i], 0)}%` : "-");
        lines.push(`PM sampling: SMs ${p("sm_active_pct")} · tensor ${p("tensor_pct")} · DRAM ${p("dram_pct")}`);
      }
    }
    lines.forEach((l, n) => { if (n) this.tip.append(document.createElement("br")); this.tip.append(document.createTextNode(l)); });
    this.tip.style.display = "block";
    this._placeTip(x, y);
  }

  /** Put the tooltip beside the pointer, inside the timeline's box and the window: flipped
   * above the pointer on the lower lanes, left of it near the right edge. */
  _placeTip(x, y) {
    const el = this.el.getBoundingClientRect(), cv = this.canvas.getBoundingClientRect();
    const tw = this.tip.offsetWidth, th = this.tip.offsetHeight;
    const px = cv.left + x, py = cv.top + y;       // the pointer, in window coordinates
    const right = Math.min(el.right, window.innerWidth), bottom = Math.min(el.bottom, window.innerHeight);
    const top = Math.max(el.top, 0), left = Math.max(el.left, 0);
    let cx = px + 14;
    if (cx + tw > right) cx = px - 14 - tw;
    cx = Math.max(left, Math.min(cx, right - tw));
    let cy = py + 16;
    if (cy + th > bottom) cy = py - 12 - th;
    cy = Math.max(top, Math.min(cy, bottom - th));
    this.tip.style.left = `${cx - el.left}px`;
    this.tip.style.top = `${cy - el.top}px`;
  }

  /** The other end of a launch: a kernel's launching call, or a call's kernels (by correlation id). */
  _linked(it) {
    const ht = this.model.tables.host, kt = this.model.tables.kernels;
    if (!ht || !ht.cols.correlation || !kt.cols.correlation) return [];
    if (!this._corr) {
      const host = new Map(), kern = new Map();
      for (let i = 0; i < ht.rows; i++) {
        const c = ht.cols.correlation[i];
        const kind = str(ht, "kind", i);
        if (c > 0 && (kind === "runtime" || kind === "sync")) host.set(c, i);
      }
      for (let i = 0; i < kt.rows; i++) {
        const c = kt.cols.correlation[i];
        if (c > 0) { if (!kern.has(c)) kern.set(c, []); kern.get(c).push(i); }
      }
      this._corr = { host, kern };
    }
    if (it.t === "kernels") {
      const r = this._corr.host.get(kt.cols.correlation[it.i]);
      return r === undefined ? [] : [r];
    }
    if (it.t === "host") return this._corr.kern.get(ht.cols.correlation[it.i]) || [];
    return [];
  }

  _click(x, y) {
    const hit = this._at(x, y);
    if (x < LABEL_W) {
      const r = this._rowAt(y);
      if (r && r.row.kind === "lane" && r.row.lane.levels.length > 1) {
        const key = r.row.lane.key;
        if (this.collapsed.has(key)) this.collapsed.delete(key); else this.collapsed.add(key);
        this.draw();
      }
      return;
    }
    this.inspect(hit ? hit.item || { gap: hit.gap } : null);
    if (hit && hit.item && hit.item.t === "kernels") {
      const t = this.model.tables.kernels;
      this.onPick(str(t, "name", hit.item.i), hit.item.i);
    } else if (!hit && this.selection) {
      this.select(null);
    }
  }

  /** What ran in [t0, t1]: kernel launches and time, copies, GPU busy and idle per device,
   * the costliest kernels: sums of CUPTI-measured intervals, clipped to the range; `rows`: per
   * kernel name and per CPU op name, { kind, name, short, count, total (us inside), share (of
   * the range's length) }, as Perfetto's slice summary. */
  summarize(t0, t1) {
    const kt = this.model.tables.kernels;
    const clip = (s, e) => Math.max(0, Math.min(e, t1) - Math.max(s, t0));
    const launches = [];
    const byName = new Map();
    let kernelTime = 0, copies = 0, copyTime = 0;
    const busy = new Map();   // device -> [[s, e]] clipped intervals
    const count = new Map(), ops = new Map();
    const ht = this.model.tables.host;
    for (const lane of this.data.lanes) {
      if (lane.host) {
        // CPU ops (every nesting level; a nested op counts its own time too, as in Perfetto).
        if (lane.stream !== 0) continue;
        for (const lv of lane.levels) {
          overlapping(lv, t0, t1, (it, d) => {
            const code = ht.cols.name[it.i];
            const o = ops.get(code) || ops.set(code, { count: 0, total: 0 }).get(code);
            o.count++; o.total += d;
          });
        }
        continue;
      }
      overlapping(lane.levels[0], t0, t1, (it, d) => {
        if (!busy.has(lane.device)) busy.set(lane.device, []);
        busy.get(lane.device).push([Math.max(it.s, t0), Math.min(it.e, t1)]);
        if (it.t === "kernels") {
          launches.push(it.i);
          kernelTime += d;
          const code = kt.cols.name[it.i];
          byName.set(code, (byName.get(code) || 0) + d);
          count.set(code, (count.get(code) || 0) + 1);
        } else { copies++; copyTime += d; }
      });
    }
    const devices = [...busy.entries()].map(([device, iv]) => {
      iv.sort((a, b) => a[0] - b[0]);
      let total = 0, cs = -Infinity, ce = -Infinity;
      for (const [s, e] of iv) {
        if (s > ce) { if (ce > cs) total += ce - cs; cs = s; ce = e; } else if (e > ce) ce = e;
      }
      if (ce > cs) total += ce - cs;
      return { device, busy: total, share: t1 > t0 ? total / (t1 - t0) : 0 };
    });
    const gt = this.model.tables.gaps;
    let idle = 0;
    if (gt) for (let i = 0; i < gt.rows; i++) idle += clip(gt.cols.start_us[i], gt.cols.start_us[i] + gt.cols.duration_us[i]);
    const top = [...byName.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3)
      .map(([code, us]) => ({ name: kt.strings.name[code], short: this.model.header.names[code] || kt.strings.name[code], us }));
    const span = t1 - t0 || 1;
    const rows = [...[...byName].map(([code, us]) => ({ kind: "kernel", name: kt.strings.name[code],
      short: this.model.header.names[code] || kt.strings.name[code], count: count.get(code), total: us, share: us / span })),
    ...[...ops].map(([code, o]) => ({ kind: "CPU op", name: ht.strings.name[code], short: ht.strings.name[code],
      count: o.count, total: o.total, share: o.total / span }))];
    return { duration: t1 - t0, launches, kernelTime, kernels: byName.size, copies, copyTime, devices, idle, top, rows };
  }

  _selBar() {
    const sel = this.selection;
    const s = sel.summary;
    const bar = this.selBar;
    bar.textContent = "";
    bar.style.display = "";
    const dev = s.devices.map((d) => `${d.device} busy ${fmtPct(d.share)}`).join(", ");
    bar.append(
      h("b", { class: "ks-sel-duration", text: fmtUs(s.duration) }),
      ` selected (${fmtUs(sel.t0)} – ${fmtUs(sel.t1)}): `,
      `${plural(s.launches.length, "kernel launch", "kernel launches")} of ${plural(s.kernels, "kernel")}, ${fmtUs(s.kernelTime)} of kernel time`,
      s.copies ? `, ${plural(s.copies, "copy", "copies")} (${fmtUs(s.copyTime)})` : "",
      dev ? ` · ${dev}` : "", s.idle > 0 ? ` · GPU idle ${fmtUs(s.idle)}` : "",
      s.top.length ? h("span", { class: "ks-sel-top", title: "kernel time inside the range (CUPTI durations, clipped to it)" },
        " · most time: ", s.top.flatMap((t, n) => [n ? ", " : "", h("span", { title: t.name, text: t.short }), ` ${fmtUs(t.us)}`])) : "",
      " ",
      h("button", { class: "ks-btn ks-sel-zoom", text: "zoom to range", title: "F", onclick: () => this.showRange(sel.t0, sel.t1, { select: false }) }),
      this.onRange && s.launches.length ? h("button", { class: "ks-btn ks-sel-table", text: "show these launches in the table",
        onclick: () => this.onRange(s.launches, `in ${fmtUs(sel.t0)} – ${fmtUs(sel.t1)}`) }) : null,
      h("button", { class: "ks-btn ks-sel-clear", text: "clear", title: "Esc", onclick: () => this.select(null) }));
    if (s.rows.length) {
      // The kernels and CPU ops in the range, costliest first (sortable); the 100 costliest shown.
      const rows = [...s.rows].sort((a, b) => b.total - a.total);
      const shown = rows.slice(0, 100);
      bar.append(h("details", { class: "ks-sel-summary", open: true },
        h("summary", { text: `${plural(s.kernels, "kernel")} and ${plural(rows.length - s.kernels, "CPU op")} in the range`
          + (rows.length > shown.length ? ` (the ${shown.length} costliest listed)` : "") }),
        sortTable(shown, [
          { key: "short", label: "name", search: true, tip: (r) => r.name },
          { key: "kind", label: "kind", search: true },
          { key: "count", label: "count", num: true, title: "slices that overlap the range", text: (r) => fmtInt(r.count) },
          { key: "total", label: "total", num: true, title: "time inside the range (clipped to it)", text: (r) => fmtUs(r.total) },
          { key: "share", label: "share", num: true, title: "total / the range's length", text: (r) => fmtPct(r.share) },
        ], { sort: "total", cls: "ks-sel-rows" }).el));
    }
  }

  /** The lane height factor that fills the `fill` element's height (a file tab), 1 without it. */
  _fillScale() {
    if (!this.fill) return 1;
    const f = this.fill.getBoundingClientRect(), w = this.wrap.getBoundingClientRect();
    const below = [...this.el.children].filter((c) => c !== this.tip && c !== this.selBar && c !== this.pane
      && c.getBoundingClientRect().top > w.top)
      .reduce((a, c) => a + c.offsetHeight, 0);
    const avail = f.bottom - w.top - below - 16;
    const base = this.rows.reduce((a, r) => a + r.levels * (r.lh / this.scale), 0) || 1;
    const s = (avail - AXIS_H - 4) / base;
    return Math.max(1, Math.min(2.5, Math.floor(s * 8) / 8));
  }

  draw() {
    const c = this.canvas;
    const cw = this.wrap.clientWidth;
    if (!cw && this.width) return;         // hidden (another tab): drawn when shown
    const width = Math.max(300, cw || 900);
    this.scale = this._fillScale();
    this._rows();
    const height = this.contentH + 4;
    const dpr = window.devicePixelRatio || 1;
    this.width = width;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
      c.width = Math.round(width * dpr); c.height = Math.round(height * dpr);
      c.style.width = `${width}px`; c.style.height = `${height}px`;
    }
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(this.el);
    const fg = css.getPropertyValue("--ks-fg").trim() || "#333";
    const grid = css.getPropertyValue("--ks-border").trim() || "#ddd";
    const selFill = css.getPropertyValue("--ks-accent").trim() || "#1976d2";
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px var(--jp-ui-font-family, sans-serif)";
    ctx.textBaseline = "alphabetic";
    const [a, b] = this.view;
    const w = width - LABEL_W;
    const sx = w / (b - a);
    // axis: the last label ends at its tick instead of running past the edge
    ctx.fillStyle = fg; ctx.strokeStyle = grid; ctx.lineWidth = 1;
    const step = niceStep((b - a) / 8);
    let lastEnd = -Infinity;
    for (let t = Math.ceil(a / step) * step; t <= b; t += step) {
      const x = LABEL_W + (t - a) * sx;
      ctx.beginPath(); ctx.moveTo(x + 0.5, AXIS_H - 4); ctx.lineTo(x + 0.5, height); ctx.stroke();
      const label = fmtUs(t);
      const tw = ctx.measureText(label).width;
      let lx = x + 2;
      if (lx + tw > width - 1) lx = x - 2 - tw;
      if (lx > lastEnd + 4 && lx >= LABEL_W) { ctx.fillText(label, lx, 12); lastEnd = lx + tw; }
    }
    const kt = this.model.tables.kernels;
    const kb = kt.cols.backend;
    const kn = kt.cols.name;
    const bkStrings = kt.strings.backend || [];
    const ct = this.model.tables.copies;
    const ht = this.model.tables.host;
    const charW = ctx.measureText("abcdefghijklmnopqrstuvwxyz").width / 26;
    const hl = this.hl;
    let drawn = 0;
    this.rows.forEach((row) => {
      const y0 = row.y, lh = row.lh;
      ctx.fillStyle = fg;
      ctx.fillText(row.text, 4, y0 + Math.min(lh, 18) / 2 + 4, LABEL_W - 8);
      const fontY = lh / 2 + 4;
      if (row.kind === "gaps") {
        const gt = this.model.tables.gaps;
        for (const g of row.g.gaps) {
          if (g.e < a || g.s > b) continue;
          ctx.fillStyle = causeColor(str(gt, "cause", g.i));
          const x0 = LABEL_W + Math.max(0, (g.s - a) * sx), x1 = LABEL_W + Math.min(w, (g.e - a) * sx);
          ctx.fillRect(x0, y0 + 3, Math.max(1, x1 - x0), lh - 6);
        }
        return;
      }
      for (let d = 0; d < row.levels; d++) {
        const lv = row.lane.levels[d];
        const y = y0 + d * lh;
        const items = lv.items;
        let j = lowerBound(items, a);
        while (j > 0 && lv.maxEnd[j - 1] >= a) j--;
        let lastX = -1, lastColor = "";
        for (; j < items.length && items[j].s <= b; j++) {
          const it = items[j];
          if (it.e < a) continue;
          const x0 = LABEL_W + Math.max(0, (it.s - a) * sx);
          const x1 = LABEL_W + Math.min(w, (it.e - a) * sx);
          const color = it.t === "kernels" ? backendColor(bkStrings[kb[it.i]])
            : it.t === "host" ? hostColor(str(ht, "kind", it.i))
            : copyColor(str(ct, "copy_kind", it.i), str(ct, "kind", it.i));
          // A highlight fades the other GPU work; the host lanes stay as context.
          const faded = hl && it.t !== "host" && !(it.t === "kernels" && hl.has(kn[it.i]));
          const key = faded ? `${color}~` : color;
          // Many launches in one pixel column: draw it once.
          if (Math.floor(x1) <= lastX && key === lastColor) continue;
          ctx.globalAlpha = faded ? 0.22 : 1;
          ctx.fillStyle = color;
          const wpx = Math.max(hl && !faded ? 2 : 1, x1 - x0);
          ctx.fillRect(x0, y + 2, wpx, lh - 4);
          if (wpx >= TEXT_MIN_W && !faded) {
            const name = this._name(it);
            const n = Math.floor((wpx - 6) / charW);
            if (n >= 3 && name) {
              ctx.fillStyle = ink(color);
              ctx.fillText(name.length > n ? `${name.slice(0, n - 1)}…` : name, x0 + 3, y + fontY, wpx - 5);
            }
          }
          ctx.globalAlpha = 1;
          lastX = Math.floor(Math.max(x1, x0 + 1)); lastColor = key;
          drawn++;
        }
      }
      if (row.kind === "lane" && row.levels > 1) {
        ctx.fillStyle = grid;
        ctx.fillRect(LABEL_W, y0 + row.h - 0.5, w, 0.5);
      }
    });
    if (hl) this._outlineHighlighted(ctx, fg);
    ctx.fillStyle = grid;
    ctx.fillRect(LABEL_W - 1, AXIS_H, 1, height);
    this.info.textContent = ` ${fmtUs(a)} – ${fmtUs(b)} (${fmtUs(b - a)})`;
    this.drawn = drawn;
    this._colors = { fg, selFill };
    this._drawOverlay();
    if (this.onDraw) this.onDraw(this.view, width);
  }

  /** The pointer's layer: the hovered launch's link and the selected range. */
  _drawOverlay() {
    const c = this.over, base = this.canvas;
    if (!this.width || !this._colors) return;
    if (c.width !== base.width || c.height !== base.height) {
      c.width = base.width; c.height = base.height;
      c.style.width = base.style.width; c.style.height = base.style.height;
    }
    const dpr = window.devicePixelRatio || 1;
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const width = this.width, height = c.height / dpr;
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px var(--jp-ui-font-family, sans-serif)";
    const { fg, selFill } = this._colors;
    this._drawMatches(ctx, selFill);
    this._drawLink(ctx, fg);
    const sel = this.selection;
    if (sel) {
      const x0 = Math.max(LABEL_W, this._t2x(sel.t0)), x1 = Math.min(width, this._t2x(sel.t1));
      if (x1 > LABEL_W && x0 < width) {
        ctx.globalAlpha = 0.12; ctx.fillStyle = selFill;
        ctx.fillRect(x0, AXIS_H, Math.max(1, x1 - x0), height - AXIS_H);
        ctx.globalAlpha = 1; ctx.fillStyle = selFill;
        ctx.fillRect(x0, AXIS_H, 1, height - AXIS_H); ctx.fillRect(x1 - 1, AXIS_H, 1, height - AXIS_H);
        const label = fmtUs(sel.t1 - sel.t0);
        const tw = ctx.measureText(label).width;
        const lx = Math.max(LABEL_W + 2, Math.min(width - tw - 4, (x0 + x1) / 2 - tw / 2));
        ctx.fillStyle = selFill; ctx.fillRect(lx - 3, 1, tw + 6, 15);
        ctx.fillStyle = ink(selFill); ctx.fillText(label, lx, 12);
      }
    }
  }

  /** The x span and y of an item on the canvas (row and level), or null when off the lanes. */
  _box(t, i) {
    const tab = this.model.tables[t];
    const li = this.data.laneOf[t] ? this.data.laneOf[t][i] : -1;
    if (li < 0) return null;
    const row = this.rows[li];
    if (!row || row.kind !== "lane") return null;
    const d = t === "host" && tab.cols.depth ? tab.cols.depth[i] : 0;
    if (d >= row.levels) return null;
    const s = tab.cols.start_us[i], e = s + tab.cols.duration_us[i];
    return { x0: this._t2x(s), x1: Math.max(this._t2x(e), this._t2x(s) + 1), y: row.y + d * row.lh, lh: row.lh };
  }

  /** Hovering a kernel or a launch call: outline both and join them (the correlation id). */
  _drawLink(ctx, fg) {
    const it = this.hover;
    if (!it || (it.t !== "kernels" && it.t !== "host")) return;
    const other = this._linked(it);
    if (!other.length) return;
    const from = it.t === "host" ? this._box("host", it.i) : this._box("host", other[0]);
    const tos = it.t === "host" ? other.map((k) => this._box("kernels", k)) : [this._box("kernels", it.i)];
    if (!from) return;
    ctx.strokeStyle = fg; ctx.lineWidth = 1.5;
    ctx.strokeRect(from.x0, from.y + 1.5, from.x1 - from.x0, from.lh - 3);
    for (const to of tos) {
      if (!to) continue;
      ctx.strokeRect(to.x0, to.y + 1.5, to.x1 - to.x0, to.lh - 3);
      const ax = Math.max(LABEL_W, Math.min(this.width, from.x0)), ay = from.y + from.lh - 1;
      const bx = Math.max(LABEL_W, Math.min(this.width, to.x0)), by = to.y + 1;
      ctx.beginPath(); ctx.moveTo(ax, ay);
      ctx.bezierCurveTo(ax, (ay + by) / 2, bx, (ay + by) / 2, bx, by); ctx.stroke();
      ctx.beginPath(); ctx.moveTo(bx, by); ctx.lineTo(bx - 3.5, by - 6); ctx.lineTo(bx + 3.5, by - 6); ctx.closePath();
      ctx.fillStyle = fg; ctx.fill();
    }
    ctx.lineWidth = 1;
  }

  _outlineHighlighted(ctx, fg) {
    const kt = this.model.tables.kernels;
    const [a, b] = this.view;
    ctx.strokeStyle = fg; ctx.lineWidth = 1;
    let n = 0;
    for (let i = 0; i < kt.rows && n < 2000; i++) {
      if (!this.hl.has(kt.cols.name[i])) continue;
      const s = kt.cols.start_us[i], e = s + kt.cols.duration_us[i];
      if (e < a || s > b) continue;
      const box = this._box("kernels", i);
      if (!box) continue;
      ctx.strokeRect(Math.max(LABEL_W, box.x0) - 0.5, box.y + 1.5, Math.max(2, Math.min(this.width, box.x1) - Math.max(LABEL_W, box.x0)) + 1, box.lh - 3);
      n++;
    }
  }
}

function legend(model) {
  const item = (color, label) => h("span", { class: "ks-legend-item" },
    h("span", { class: "ks-swatch", style: `background:${color}` }), label);
  const causes = Object.entries(vocab("causes")).filter(([, c]) => c.legend);
  // The backends this report's kernels ran on, each in its colour (the payload's vocabulary).
  const backends = [...new Set(model.tables.kernels.strings.backend || [])].sort();
  return h("div", { class: "ks-legend" },
    "kernels: ", backends.map((b) => item(backendColor(b), b)),
    " · copies: ", Object.keys(vocab("copies")).map((k) => item(copyColor(k, k), k)),
    " · host: ", item(hostColor("op"), "CPU op"), item(hostColor("annotation"), "annotation"),
    item(hostColor("runtime"), "CUDA API"), item(hostColor("sync"), "synchronize"),
    " · GPU idle, waiting on: ", causes.map(([, c]) => item(c.color, c.legend)));
}

/** Host spans by kind: "op", "annotation", "runtime" or "sync" (a host-blocking call; marked by Python). */
function hostColor(kind) {
  const c = vocab("host");
  return c[kind] || (kind === "annotation" ? c.op : null) || c.runtime || NEUTRAL;
}

/** A copy by direction (HtoD, DtoH, DtoD), else by kind (memset). */
function copyColor(copyKind, kind) {
  const c = vocab("copies");
  return c[copyKind] || c[kind] || NEUTRAL;
}

function plural(n, one, many = `${one}s`) { return `${fmtInt(n)} ${n === 1 ? one : many}`; }

function niceStep(x) {
  const p = 10 ** Math.floor(Math.log10(x || 1));
  const m = x / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}
