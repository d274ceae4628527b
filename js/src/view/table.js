// The kernel table: one row per kernel name (per group), expandable to its launches.
// Aggregation runs over the launch columns in one pass; only the visible rows are in the DOM
// (fixed row height), so 100k launches scroll as smoothly as 100.
//
// Names come first and take the room left (the Kernel column also resizes by its header's edge);
// the launch-shape columns (Grid, Block, Regs, Smem, Waves) show behind the "launch shape" toggle.
// A kernel whose launches differ shows the range ("64–1,024") or "mixed", never one launch's value.
//
// API, for the report's other panels (the first screen's links to evidence, the timeline):
//   table.apply({ filter, backend, groupBy, sort, desc, select, launches, label, shapes })
//       filter: text matched in the full name, readable name or CPU op; backend: one backend
//       label or ""; groupBy: "none" | "backend" | "op"; sort: a column key (COLUMNS) and desc:
//       its direction; select: full kernel names to select (and scroll to; the selection is
//       reported through onSelect); launches: launch row indices (rep.kernels order) to restrict
//       the table to, e.g. the launches of a timeline range, described by `label` ("in 1.20 ms –
//       3.40 ms"), null to lift it; shapes: true/false shows/hides the launch-shape columns.
//       Fields left out keep their value. Returns the table.
//   table.setSelection(names)   select without reporting it (the caller already knows)
//   table.toCSV()               the rows the filters leave, in their order, as CSV text
//   table.exportCSV()           ... downloaded as <report>-kernels.csv
import { h, fmtUs, fmtPct, fmtInt, fmtBytes, fmtNum, backendColor, vocab } from "./format.js";
import { str, int, num } from "./data.js";
import { download, copyText, toCSV, fileStem } from "./files.js";

export const ROW_H = 24;

// Widths fit each header label with its sort arrow (no cut headers at 12px bold).
export const COLUMNS = [
  { key: "expand", label: "", width: 22, sortable: false },
  { key: "short", label: "Kernel", width: 220, flex: true, align: "left", title: "readable name; hover a row for the full name as recorded" },
  { key: "backend", label: "Backend", width: 86, align: "left", title: "library that launched the kernel (kernelscope's rules: name, CPU op, launch API)" },
  { key: "launches", label: "Launches", width: 84 },
  { key: "total", label: "Total", width: 76, title: "sum of kernel durations measured by CUPTI" },
  { key: "mean", label: "Mean", width: 72, title: "mean kernel duration (CUPTI)" },
  { key: "share", label: "Share", width: 80, title: "share of all kernel time (of the launches the table holds); a launch row: that launch's share" },
  { key: "occ", label: "Occupancy", width: 124, title: "theoretical occupancy computed by kernelscope (CUDA occupancy calculator) and what limits it" },
  // Sized to their values (ranges such as "1–128,000"): with the toggle on, a notebook's ~960 px
  // output area scrolls sideways and the Kernel column stays in view (style.css, --ks-sx).
  { key: "grid", label: "Grid", width: 96, shape: true, title: "grid blocks (x×y×z); a range when launches differ" },
  { key: "block", label: "Block", width: 70, shape: true, sortable: false, title: "threads per block (x×y×z), recorded by CUPTI" },
  { key: "regs", label: "Regs", width: 58, shape: true, title: "registers per thread (recorded by CUPTI)" },
  { key: "smem", label: "Smem", width: 80, shape: true, title: "shared memory per block, static + dynamic (CUPTI)" },
  { key: "waves", label: "Waves", width: 84, shape: true, title: "grid blocks / (active blocks per SM x SMs), computed" },
  // Per-kernel duration statistics, as rep.summary() and Nsight Systems' kernel summary (behind "statistics").
  { key: "median", label: "Median", width: 74, stats: true, title: "median launch duration" },
  { key: "min", label: "Min", width: 70, stats: true, title: "shortest launch" },
  { key: "max", label: "Max", width: 70, stats: true, title: "longest launch" },
  { key: "std", label: "Std dev", width: 74, stats: true, title: "standard deviation of the launch durations (sample, as rep.summary()'s std_us)" },
  // What the hardware measured, where the report has it: PM-sampled counters time-weighted over
  // the kernel's launches (as analysis/counters.kernel_counters), and the top warp stall.
  { key: "sm_active", label: "SM active", width: 84, measured: "sm_active_pct", title: "SMs active, % of peak (CUPTI PM sampling, time-weighted over the launches)" },
  { key: "tensor", label: "Tensor", width: 72, measured: "tensor_pct", title: "tensor pipe busy, % of peak (CUPTI PM sampling, time-weighted over the launches)" },
  { key: "dram", label: "DRAM", width: 68, measured: "dram_pct", title: "DRAM throughput, % of peak (CUPTI PM sampling, time-weighted over the launches)" },
  { key: "stall", label: "Top stall", width: 130, measured: "top_stall", align: "left", title: "the warp-stall reason with the most samples (Nsight Compute or Proton; of the kernel's longest launch)" },
];
const COUNTER_KEYS = { sm_active: "sm_active_pct", tensor: "tensor_pct", dram: "dram_pct" };
const NAME_MIN = 120;
// The Kernel column's least width with the launch-shape columns shown.
const SHAPES_NAME_MIN = 160;

/** A limiter such as "registers+shared_mem" in a few letters for the table cell (the short
 * forms of kernelscope.analysis.occupancy.LIMITERS, from the payload). */
function shortLimiter(lim) {
  const short = vocab("limiters");
  return lim ? lim.split("+").map((x) => short[x] || x).join("+") : "";
}

function minMax(a, key, v) {
  if (v === null || v === undefined || Number.isNaN(v)) return;
  if (a[key] === null || v < a[key][0]) a[key] = [v, a[key] ? a[key][1] : v];
  if (v > a[key][1]) a[key][1] = v;
}

/** Per-(group, kernel name) statistics over the launches (all, or those with mask[i] set). */
export function aggregate(model, groupBy, mask = null) {
  const k = model.tables.kernels;
  const n = k.rows;
  const c = k.cols;
  const nameCodes = c.name;
  const groupCodes = groupBy === "backend" ? c.backend : groupBy === "op" ? c.op : null;
  const dur = c.duration_us;
  const counters = Object.values(COUNTER_KEYS).filter((col) => c[col]);
  const byKey = new Map();
  let total = 0, launches = 0;
  for (let i = 0; i < n; i++) {
    if (mask && !mask[i]) continue;
    const g = groupCodes ? groupCodes[i] : 0;
    const key = g * 1e7 + nameCodes[i];
    let a = byKey.get(key);
    if (!a) {
      a = { group: g, name: nameCodes[i], launches: 0, total: 0, min: Infinity, max: -Infinity,
            first: i, launchIdx: [], gridVaries: false, blockVaries: false, cfgVaries: false,
            blocks: null, regs: null, smem: null, waves: null, occ: null, m2: 0, longest: i, cw: {}, cd: {} };
      byKey.set(key, a);
    }
    const d = dur[i];
    // Welford's running variance (one pass, no cancellation).
    const delta = d - a.total / Math.max(1, a.launches);
    a.launches++; a.total += d; total += d; launches++;
    a.m2 += delta * (d - a.total / a.launches);
    if (d < a.min) a.min = d;
    if (d > a.max) { a.max = d; a.longest = i; }
    for (const col of counters) { const v = c[col][i]; if (!Number.isNaN(v)) { a.cw[col] = (a.cw[col] || 0) + v * d; a.cd[col] = (a.cd[col] || 0) + d; } }
    a.launchIdx.push(i);
    const f = a.first;
    if (!a.gridVaries && (c.grid_x[i] !== c.grid_x[f] || c.grid_y[i] !== c.grid_y[f] || c.grid_z[i] !== c.grid_z[f])) a.gridVaries = true;
    if (!a.blockVaries && (c.block_x[i] !== c.block_x[f] || c.block_y[i] !== c.block_y[f] || c.block_z[i] !== c.block_z[f])) a.blockVaries = true;
    if (!a.cfgVaries && c.shape[i] !== c.shape[f]) a.cfgVaries = true;
    const gx = int(k, "grid_x", i);
    if (gx !== null) minMax(a, "blocks", gx * (int(k, "grid_y", i) ?? 1) * (int(k, "grid_z", i) ?? 1));
    minMax(a, "regs", int(k, "registers_per_thread", i));
    minMax(a, "smem", int(k, "shared_mem_bytes", i));
    minMax(a, "waves", num(k, "waves", i));
    minMax(a, "occ", num(k, "theoretical_occupancy", i));
  }
  const rows = [...byKey.values()];
  for (const a of rows) {
    a.mean = a.total / a.launches;
    a.share = total > 0 ? a.total / total : 0;
    a.std = a.launches > 1 ? Math.sqrt(Math.max(0, a.m2) / (a.launches - 1)) : 0;
    const ds = Float64Array.from(a.launchIdx, (i) => dur[i]).sort();
    const h2 = ds.length >> 1;
    a.median = ds.length % 2 ? ds[h2] : (ds[h2 - 1] + ds[h2]) / 2;
    for (const [key, col] of Object.entries(COUNTER_KEYS)) a[key] = a.cd[col] > 0 ? a.cw[col] / a.cd[col] : null;
    a.stall = c.top_stall ? str(k, "top_stall", a.longest) : null;
  }
  return { rows, total, launches };
}

function groupLabel(model, groupBy, code) {
  if (!groupBy || groupBy === "none") return "";
  const s = model.tables.kernels.strings[groupBy === "backend" ? "backend" : "op"];
  return code >= 0 ? s[code] : groupBy === "op" ? "(no CPU op)" : "(unknown)";
}

const hi = (r) => (r ? r[1] : -1);

/** The sort key of an aggregate row for a column (a range sorts by its top). */
function sortValue(model, a, key) {
  const k = model.tables.kernels;
  switch (key) {
    case "short": return (model.header.names[a.name] || "").toLowerCase();
    case "backend": return (str(k, "backend", a.first) || "").toLowerCase();
    case "launches": return a.launches;
    case "total": case "share": return a.total;
    case "mean": return a.mean;
    case "max": return a.max;
    case "median": return a.median;
    case "min": return a.min;
    case "std": return a.std;
    case "sm_active": case "tensor": case "dram": return a[key] ?? -1;
    case "stall": return a.stall || "";
    case "grid": return hi(a.blocks);
    case "regs": return hi(a.regs);
    case "smem": return hi(a.smem);
    case "occ": return hi(a.occ);
    case "waves": return hi(a.waves);
    default: return a.total;
  }
}

/** "64–1,024" for a range that differs, else the one value; fmt formats each end. */
function rangeText(r, fmt) {
  if (!r) return "-";
  return r[0] === r[1] ? fmt(r[0]) : `${fmt(r[0])}–${fmt(r[1])}`;
}

/**
 * Launch-shape cells of a set of launches (an aggregate row, or the launches a details panel
 * shows): each value, or its range / "mixed" when the launches differ, with a title saying so.
 */
export function shapeCells(model, a) {
  const k = model.tables.kernels;
  const f = a.first;
  const n = a.launches;
  const varies = (what) => `${what} differs between the ${fmtInt(n)} launches`;
  const occ = num(k, "theoretical_occupancy", f);
  const lim = str(k, "occupancy_limiter", f);
  const out = {
    grid: a.gridVaries
      ? { text: a.blocks && a.blocks[0] !== a.blocks[1] ? rangeText(a.blocks, fmtInt) : "mixed",
          title: `${varies("the grid")}: ${rangeText(a.blocks, fmtInt)} blocks`, varies: true }
      : { text: dims(k, "grid", f), title: null },
    block: a.blockVaries ? { text: "mixed", title: varies("the block size"), varies: true } : { text: dims(k, "block", f), title: null },
    regs: { text: rangeText(a.regs, String), title: a.regs && a.regs[0] !== a.regs[1] ? varies("registers per thread") : null },
    smem: { text: rangeText(a.smem, smemText), title: a.smem && a.smem[0] !== a.smem[1] ? varies("shared memory per block") : null },
    waves: { text: rangeText(a.waves, (v) => fmtNum(v, 2)), title: a.waves && a.waves[0] !== a.waves[1] ? varies("waves") : null },
    occ: a.occ && a.occ[0] !== a.occ[1]
      ? { text: `${rangeText(a.occ, (v) => fmtPct(v, 0))}`, title: `${varies("theoretical occupancy")}; select the row for each launch shape` }
      : { text: occ === null ? "-" : `${fmtPct(occ, 0)}${lim && occ < 1 ? ` ${shortLimiter(lim)}` : ""}`,
          title: lim ? `limited by ${lim}` : null },
  };
  return out;
}

/** The aggregate row of an arbitrary set of launches (the details panel of a selection). */
export function launchesSummary(model, idx) {
  const mask = new Uint8Array(model.tables.kernels.rows);
  for (const i of idx) mask[i] = 1;
  const rows = aggregate(model, "none", mask).rows;
  if (rows.length === 1) return rows[0];
  // Several kernels: one row over all of them.
  const all = { ...rows[0], launches: 0, gridVaries: false, blockVaries: false, blocks: null, regs: null, smem: null, waves: null, occ: null };
  for (const r of rows) {
    all.launches += r.launches;
    all.gridVaries = all.gridVaries || r.gridVaries || dims(model.tables.kernels, "grid", r.first) !== dims(model.tables.kernels, "grid", all.first);
    all.blockVaries = all.blockVaries || r.blockVaries || dims(model.tables.kernels, "block", r.first) !== dims(model.tables.kernels, "block", all.first);
    for (const key of ["blocks", "regs", "smem", "waves", "occ"]) if (r[key]) { minMax(all, key, r[key][0]); minMax(all, key, r[key][1]); }
  }
  return all;
}

export class KernelTable {
  constructor(model, { onSelect, height = 360 } = {}) {
    this.model = model;
    this.onSelect = onSelect || (() => {});
    // %%kernelprofile --sort / --top choose the first view; every column still sorts.
    const view = model.header.view || {};
    const sort = { total: "total", mean: "mean", max: "max", launches: "launches", name: "short" }[view.sort] || "total";
    this.state = { sort, desc: sort !== "short", filter: "", backend: "", groupBy: "none", shapes: false, stats: false,
                   launches: null, label: "" };
    this.top = view.top > 0 ? view.top : null;
    this.nameWidth = null;     // set when the user drags the Kernel column's edge
    this.expanded = new Set();
    this.collapsedGroups = new Set();
    this.selected = new Set();
    this.el = h("div", { class: "ks-table" });
    this.toolbar = this._toolbar();
    this.head = h("div", { class: "ks-row ks-head", role: "row" });
    this.spacer = h("div", { class: "ks-spacer" });
    this.maxHeight = height;
    this.body = h("div", { class: "ks-body", style: `height:${height}px`, tabindex: "0" }, this.spacer);
    this.body.addEventListener("scroll", () => this._schedule());
    this.body.addEventListener("keydown", (e) => this._key(e));
    this.status = h("div", { class: "ks-table-status" });
    // Scrolled sideways (a cell narrower than the columns), the expand and Kernel cells stay put:
    // the rows shift them back by the scroll offset (--ks-sx, style.css).
    const hscroll = h("div", { class: "ks-hscroll" }, this.head, this.body);
    hscroll.addEventListener("scroll", () => hscroll.style.setProperty("--ks-sx", `${hscroll.scrollLeft}px`));
    this.el.append(this.toolbar, hscroll, this.status);
    this.aggCache = {};
    this._layout();
    this.refresh();
  }

  /** The columns shown now (the launch-shape ones only behind their toggle). */
  get columns() {
    const cols = this.model.tables.kernels.cols;
    return COLUMNS.filter((c) => (!c.shape || this.state.shapes) && (!c.stats || this.state.stats) && (!c.measured || cols[c.measured]));
  }

  _template() {
    return this.columns.map((c) => (c.flex ? (this.nameWidth ? `${this.nameWidth}px` : `minmax(${this._nameMin()}px, 1fr)`) : `${c.width}px`)).join(" ");
  }

  _nameMin() { return this.state.shapes ? SHAPES_NAME_MIN : COLUMNS.find((c) => c.flex).width;
  }

  /** Header cells and widths for the columns shown. */
  _layout() {
    const cols = this.columns;
    this.template = this._template();
    const minWidth = cols.reduce((a, c) => a + (c.flex ? this.nameWidth || this._nameMin() : c.width), 0);
    this.head.style.cssText = `grid-template-columns:${this.template};min-width:${minWidth}px`;
    this.body.style.minWidth = `${minWidth}px`;
    this.head.textContent = "";
    // Who measured the durations (CUPTI, or Nsight Compute for a replay): header.capabilities.
    const by = (this.model.header.capabilities || {}).duration_source || "CUPTI";
    for (const c of cols) {
      const cell = h("div", { class: `ks-cell ks-h-${c.key}${c.align === "left" ? " ks-left" : ""}`, role: "columnheader",
        "data-col": c.key,
        title: [c.title && ["total", "mean"].includes(c.key) ? c.title.replace("CUPTI", by) : c.title,
          c.sortable === false ? null : "click to sort"].filter(Boolean).join(" · ") || null });
      cell.append(h("span", { class: "ks-h-label", text: c.label }));
      if (c.sortable !== false) cell.addEventListener("click", () => this.sortBy(c.key));
      if (c.flex) cell.append(this._resizer(cell));
      this.head.append(cell);
    }
  }

  /** The Kernel column's right edge: drag to widen or narrow it (double-click: back to auto). */
  _resizer(cell) {
    const grip = h("span", { class: "ks-col-resize", title: "drag to resize the Kernel column; double-click: fit" });
    grip.addEventListener("click", (e) => e.stopPropagation());
    grip.addEventListener("dblclick", (e) => { e.stopPropagation(); this.nameWidth = null; this._layout(); this.refresh(); });
    grip.addEventListener("pointerdown", (e) => {
      e.preventDefault(); e.stopPropagation();
      const x0 = e.clientX, w0 = cell.getBoundingClientRect().width;
      const move = (ev) => {
        this.nameWidth = Math.max(NAME_MIN, Math.round(w0 + ev.clientX - x0));
        this._layout();
        this._paint(true);
      };
      const up = () => { window.removeEventListener("pointermove", move); window.removeEventListener("pointerup", up); this.refresh(); };
      window.addEventListener("pointermove", move);
      window.addEventListener("pointerup", up);
    });
    return grip;
  }

  _toolbar() {
    const backends = [...new Set(this.model.tables.kernels.strings.backend || [])].sort();
    this.filterInput = h("input", { class: "ks-filter", type: "search", placeholder: "filter kernels, ops…",
      "aria-label": "filter kernels" });
    this.filterInput.addEventListener("input", () => { this.state.filter = this.filterInput.value; this.refresh(); });
    this.backendSelect = h("select", { class: "ks-backend-filter", "aria-label": "backend" },
      h("option", { value: "", text: "all backends" }),
      backends.map((b) => h("option", { value: b, text: b })));
    this.backendSelect.addEventListener("change", () => { this.state.backend = this.backendSelect.value; this.refresh(); });
    this.groupSelect = h("select", { class: "ks-group-by", "aria-label": "group by" },
      h("option", { value: "none", text: "no grouping" }),
      h("option", { value: "backend", text: "group by backend" }),
      h("option", { value: "op", text: "group by CPU op" }));
    this.groupSelect.addEventListener("change", () => { this.state.groupBy = this.groupSelect.value; this.refresh(); });
    this.shapeToggle = h("button", { class: "ks-btn ks-shape-toggle", "aria-pressed": "false",
      title: "show the launch-shape columns: grid, block, registers, shared memory, waves",
      text: "launch shape", onclick: () => this.apply({ shapes: !this.state.shapes }) });
    this.statsToggle = h("button", { class: "ks-btn ks-stats-toggle", "aria-pressed": "false",
      title: "show the duration statistics: median, min, max, standard deviation (as rep.summary())",
      text: "statistics", onclick: () => this.apply({ stats: !this.state.stats }) });
    const csv = h("button", { class: "ks-btn ks-export-csv", text: "CSV",
      title: "download the rows the filters leave, as CSV (times in microseconds, sizes in bytes)",
      onclick: () => this.exportCSV() });
    return h("div", { class: "ks-toolbar" }, this.filterInput, this.backendSelect, this.groupSelect, this.shapeToggle, this.statsToggle, csv);
  }

  /** Set any of filter, backend, groupBy, sort, desc, select, launches (+ label), shapes. */
  apply(v = {}) {
    const s = this.state;
    if (v.filter !== undefined) { s.filter = v.filter || ""; this.filterInput.value = s.filter; }
    if (v.backend !== undefined) { s.backend = v.backend || ""; this.backendSelect.value = s.backend; }
    if (v.groupBy !== undefined) { s.groupBy = v.groupBy || "none"; this.groupSelect.value = s.groupBy; }
    if (v.sort !== undefined) { s.sort = v.sort; s.desc = v.desc ?? !["short", "backend"].includes(v.sort); }
    else if (v.desc !== undefined) s.desc = !!v.desc;
    if (v.launches !== undefined) {
      s.launches = v.launches ? new Uint8Array(this.model.tables.kernels.rows) : null;
      if (v.launches) for (const i of v.launches) s.launches[i] = 1;
      s.label = v.launches ? v.label || "selected launches" : "";
    }
    if (v.shapes !== undefined && !!v.shapes !== s.shapes) {
      s.shapes = !!v.shapes;
      this.shapeToggle.setAttribute("aria-pressed", String(s.shapes));
      this.shapeToggle.classList.toggle("ks-on", s.shapes);
      this._layout();
    }
    if (v.stats !== undefined && !!v.stats !== s.stats) {
      s.stats = !!v.stats;
      this.statsToggle.setAttribute("aria-pressed", String(s.stats));
      this.statsToggle.classList.toggle("ks-on", s.stats);
      this._layout();
    }
    if (v.select !== undefined) {
      this.top = null;     // a kernel asked for by name must be reachable
      this.selected = new Set(v.select || []);
    }
    this.refresh();
    if (v.select !== undefined) {
      this.scrollTo([...this.selected][0]);
      this.onSelect([...this.selected]);
    }
    return this;
  }

  sortBy(key) {
    if (this.state.sort === key) this.state.desc = !this.state.desc;
    else { this.state.sort = key; this.state.desc = !["short", "backend"].includes(key); }
    this.refresh();
  }

  setFilter(text) { return this.apply({ filter: text }); }

  _agg() {
    const { groupBy, launches } = this.state;
    if (launches) return aggregate(this.model, groupBy, launches);
    if (!this.aggCache[groupBy]) this.aggCache[groupBy] = aggregate(this.model, groupBy);
    return this.aggCache[groupBy];
  }

  /** The aggregate rows the filters leave, sorted (before --top cuts them). */
  matchingRows() {
    const m = this.model;
    const k = m.tables.kernels;
    const { filter, backend, sort, desc } = this.state;
    const agg = this._agg();
    const q = filter.trim().toLowerCase();
    const names = k.strings.name || [];
    const rows = agg.rows.filter((a) => {
      if (backend && str(k, "backend", a.first) !== backend) return false;
      if (!q) return true;
      if ((m.header.names[a.name] || "").toLowerCase().includes(q)) return true;
      if ((names[a.name] || "").toLowerCase().includes(q)) return true;
      const op = str(k, "op", a.first);
      return !!op && op.toLowerCase().includes(q);
    });
    const sign = desc ? -1 : 1;
    rows.sort((x, y) => {
      const a = sortValue(m, x, sort), b = sortValue(m, y, sort);
      return a < b ? -sign : a > b ? sign : y.total - x.total;
    });
    return { rows, agg };
  }

  /** Rebuild the flat row list (groups, kernels, expanded launches) and repaint. */
  refresh() {
    const m = this.model;
    const k = m.tables.kernels;
    const { groupBy, filter, backend, sort, desc, launches } = this.state;
    const { rows: matched, agg } = this.matchingRows();
    let rows = matched;
    const matching = rows.length;
    if (this.top && rows.length > this.top) rows = rows.slice(0, this.top);
    const flat = [];
    const pushKernel = (a) => {
      flat.push({ type: "kernel", a });
      const key = `${a.group}:${a.name}`;
      if (this.expanded.has(key)) {
        for (const i of a.launchIdx) flat.push({ type: "launch", i, a });
      }
    };
    if (groupBy !== "none") {
      const groups = new Map();
      for (const a of rows) {
        if (!groups.has(a.group)) groups.set(a.group, { code: a.group, rows: [], total: 0, launches: 0 });
        const g = groups.get(a.group);
        g.rows.push(a); g.total += a.total; g.launches += a.launches;
      }
      const gs = [...groups.values()].sort((x, y) => y.total - x.total);
      for (const g of gs) {
        flat.push({ type: "group", g, label: groupLabel(m, groupBy, g.code), share: agg.total ? g.total / agg.total : 0 });
        if (!this.collapsedGroups.has(g.code)) g.rows.forEach(pushKernel);
      }
    } else rows.forEach(pushKernel);
    this.rows = flat;
    this.aggTotal = agg.total;
    this.visibleKernels = rows.length;
    this.spacer.style.height = `${flat.length * ROW_H}px`;
    this.body.style.height = `${Math.max(3, Math.min(flat.length, Math.floor(this.maxHeight / ROW_H))) * ROW_H + 2}px`;
    for (const c of this.head.children) {
      const col = c.getAttribute("data-col");
      c.classList.toggle("ks-sorted", col === sort);
      c.setAttribute("aria-sort", col === sort ? (desc ? "descending" : "ascending") : "none");
      const def = COLUMNS.find((x) => x.key === col);
      c.querySelector(".ks-h-label").textContent = def.label + (col === sort ? (desc ? " ▼" : " ▲") : "");
    }
    // What the rows shown hold, of the whole report: kernel rows, launches and kernel time.
    if (!this.aggCache.none) this.aggCache.none = aggregate(m, "none");
    const allAgg = this.aggCache.none;
    const filtered = !!(filter.trim() || backend || launches);
    let shownLaunches = 0, shownTime = 0;
    for (const a of matched) { shownLaunches += a.launches; shownTime += a.total; }
    this.status.textContent = "";
    this.status.append(filtered
      ? `${fmtInt(matching)} of ${fmtInt(allAgg.rows.length)} kernel rows · ${fmtInt(shownLaunches)} of ${fmtInt(k.rows)} launches · `
        + `${fmtUs(shownTime)} of ${fmtUs(allAgg.total)} kernel time (${fmtPct(allAgg.total ? shownTime / allAgg.total : 0)}) · filtered`
        + (launches ? ` to the launches ${this.state.label}` : "")
      : `${fmtInt(rows.length)} of ${fmtInt(allAgg.rows.length)} kernel rows · ${fmtInt(k.rows)} launches · ${fmtUs(allAgg.total)} kernel time`);
    if (rows.length < matching) {
      this.status.append(" · ", h("a", { class: "ks-show-all", href: "#", text: `show all ${matching}`,
        onclick: (e) => { e.preventDefault(); this.top = null; this.refresh(); } }));
    }
    if (filtered) {
      this.status.append(" · ", h("a", { class: "ks-clear-filter", href: "#", text: "clear",
        onclick: (e) => { e.preventDefault(); this.apply({ filter: "", backend: "", launches: null }); } }));
    }
    this._paint(true);
  }

  _schedule() {
    if (this._raf) return;
    this._raf = requestAnimationFrame(() => { this._raf = null; this._paint(false); });
  }

  _paint(force) {
    const top = this.body.scrollTop;
    const height = this.body.clientHeight || 360;
    const first = Math.max(0, Math.floor(top / ROW_H) - 5);
    const last = Math.min(this.rows.length, Math.ceil((top + height) / ROW_H) + 5);
    if (!force && this._range && this._range[0] === first && this._range[1] === last) return;
    this._range = [first, last];
    for (const el of [...this.body.querySelectorAll(".ks-row")]) el.remove();
    const frag = document.createDocumentFragment();
    for (let r = first; r < last; r++) frag.append(this._rowEl(this.rows[r], r));
    this.body.append(frag);
  }

  /** Scroll a kernel's row (by full name) into the body's view. */
  scrollTo(name) {
    if (!name) return;
    const names = this.model.tables.kernels.strings.name;
    const r = this.rows.findIndex((row) => row.type === "kernel" && names[row.a.name] === name);
    if (r < 0) return;
    const top = r * ROW_H, h0 = this.body.clientHeight || this.maxHeight;
    if (top < this.body.scrollTop || top + ROW_H > this.body.scrollTop + h0) this.body.scrollTop = Math.max(0, top - h0 / 3);
    this._paint(true);
  }

  _rowEl(row, r) {
    const style = `top:${r * ROW_H}px;grid-template-columns:${this.template}`;
    if (row.type === "group") {
      const open = !this.collapsedGroups.has(row.g.code);
      const el = h("div", { class: "ks-row ks-group", style, role: "row" },
        h("div", { class: "ks-cell ks-group-label", text: `${open ? "▾" : "▸"} ${row.label}` }),
        h("div", { class: "ks-cell", text: `${row.g.rows.length} kernels · ${fmtInt(row.g.launches)} launches · ${fmtUs(row.g.total)} · ${fmtPct(row.share)} of kernel time` }));
      el.addEventListener("click", () => {
        if (open) this.collapsedGroups.add(row.g.code); else this.collapsedGroups.delete(row.g.code);
        this.refresh();
      });
      return el;
    }
    if (row.type === "launch") return this._launchEl(row, style);
    const m = this.model;
    const k = m.tables.kernels;
    const a = row.a;
    const f = a.first;
    const name = k.strings.name[a.name];
    const key = `${a.group}:${a.name}`;
    const open = this.expanded.has(key);
    const sel = this.selected.has(name);
    const bk = str(k, "backend", f) || "-";
    const sh = shapeCells(m, a);
    const cells = {
      expand: h("div", { class: "ks-cell ks-expand", text: open ? "▾" : "▸", title: open ? "hide launches" : "show launches" }),
      short: h("div", { class: "ks-cell ks-left ks-name", text: m.header.names[a.name] || name, title: name }),
      backend: h("div", { class: "ks-cell ks-left" }, h("span", { class: "ks-swatch", style: `background:${backendColor(bk)}` }), bk),
      launches: h("div", { class: "ks-cell", text: fmtInt(a.launches) }),
      total: h("div", { class: "ks-cell", text: fmtUs(a.total) }),
      mean: h("div", { class: "ks-cell", text: fmtUs(a.mean), title: a.launches > 1 ? `min ${fmtUs(a.min)} · max ${fmtUs(a.max)}` : null }),
      share: h("div", { class: "ks-cell ks-share" },
        h("span", { class: "ks-bar", style: `width:${Math.max(1, Math.round(a.share * 36))}px;background:${backendColor(bk)}` }),
        h("span", { text: fmtPct(a.share) })),
      median: h("div", { class: "ks-cell", text: fmtUs(a.median) }),
      min: h("div", { class: "ks-cell", text: fmtUs(a.min) }),
      max: h("div", { class: "ks-cell", text: fmtUs(a.max) }),
      std: h("div", { class: "ks-cell", text: fmtUs(a.std) }),
      sm_active: h("div", { class: "ks-cell", text: pct100(a.sm_active) }),
      tensor: h("div", { class: "ks-cell", text: pct100(a.tensor) }),
      dram: h("div", { class: "ks-cell", text: pct100(a.dram) }),
      stall: h("div", { class: "ks-cell ks-left", text: a.stall || "-", title: a.stall ? (((this.model.header.stalls || {}).reasons || {})[a.stall] || {}).title || null : null }),
    };
    for (const c of ["grid", "block", "regs", "smem", "waves", "occ"]) {
      cells[c] = h("div", { class: `ks-cell${c === "occ" ? " ks-occ" : ""}${sh[c].varies ? " ks-varies" : ""}`, text: sh[c].text, title: sh[c].title });
    }
    const el = h("div", { class: `ks-row ks-kernel${sel ? " ks-selected" : ""}`, style, role: "row",
      "data-name": name, "aria-selected": sel ? "true" : "false" }, this.columns.map((c) => cells[c.key]));
    el.firstChild.addEventListener("click", (e) => {
      e.stopPropagation();
      if (open) this.expanded.delete(key); else this.expanded.add(key);
      this.refresh();
    });
    el.addEventListener("click", (e) => this.select(name, e.ctrlKey || e.metaKey || e.shiftKey));
    return el;
  }

  _launchEl(row, style) {
    const k = this.model.tables.kernels;
    const i = row.i;
    const op = str(k, "op", i);
    const dur = k.cols.duration_us[i];
    const occ = num(k, "theoretical_occupancy", i);
    const lim = str(k, "occupancy_limiter", i);
    const cells = {
      expand: h("div", { class: "ks-cell" }),
      // Start, stream and CPU op in the wide name column: the narrow ones hold numbers only.
      // A replay's start times are not a timeline (header.capabilities): no "@ time" for its launches.
      short: h("div", { class: "ks-cell ks-left", text: `${(this.model.header.capabilities || {}).timeline === false ? ""
        : `@ ${fmtUs(k.cols.start_us[i])}  `}${str(k, "device", i) || ""} s${int(k, "stream", i) ?? "?"}`
        + `  ·  ${op || "(no CPU op)"}`, title: [op ? `CPU op: ${op}` : null, str(k, "source", i)].filter(Boolean).join("\n") || null }),
      backend: h("div", { class: "ks-cell" }),
      launches: h("div", { class: "ks-cell" }),
      total: h("div", { class: "ks-cell", text: fmtUs(dur), title: `this launch's duration (${(this.model.header.capabilities || {}).duration_source || "CUPTI"})` }),
      mean: h("div", { class: "ks-cell" }),
      // The column's meaning on every row: share of all kernel time; of its kernel in the title.
      share: h("div", { class: "ks-cell", text: this.aggTotal ? fmtPct(dur / this.aggTotal) : "",
        title: `this launch's share of all kernel time${row.a.total ? `; ${fmtPct(dur / row.a.total)} of this kernel's time` : ""}` }),
      median: h("div", { class: "ks-cell" }), min: h("div", { class: "ks-cell" }), max: h("div", { class: "ks-cell" }),
      std: h("div", { class: "ks-cell" }),
      sm_active: h("div", { class: "ks-cell", text: pct100(num(k, "sm_active_pct", i)) }),
      tensor: h("div", { class: "ks-cell", text: pct100(num(k, "tensor_pct", i)) }),
      dram: h("div", { class: "ks-cell", text: pct100(num(k, "dram_pct", i)) }),
      stall: h("div", { class: "ks-cell ks-left", text: str(k, "top_stall", i) || "" }),
      grid: h("div", { class: "ks-cell", text: dims(k, "grid", i) }),
      block: h("div", { class: "ks-cell", text: dims(k, "block", i) }),
      regs: h("div", { class: "ks-cell", text: fmtOpt(int(k, "registers_per_thread", i)) }),
      smem: h("div", { class: "ks-cell", text: smemText(int(k, "shared_mem_bytes", i)) }),
      occ: h("div", { class: "ks-cell", text: occ === null ? "-" : `${fmtPct(occ, 0)}${lim && occ < 1 ? ` ${shortLimiter(lim)}` : ""}`, title: lim ? `limited by ${lim}` : null }),
      waves: h("div", { class: "ks-cell", text: fmtNum(num(k, "waves", i), 2) }),
    };
    return h("div", { class: "ks-row ks-launch", style, role: "row", "data-launch": String(i) },
      this.columns.map((c) => cells[c.key]));
  }

  /** Select a kernel by full name (toggle adds to / removes from a multi-selection). */
  select(name, toggle = false) {
    if (toggle) {
      if (this.selected.has(name)) this.selected.delete(name); else this.selected.add(name);
    } else {
      this.selected = new Set(this.selected.size === 1 && this.selected.has(name) ? [] : [name]);
    }
    this._paint(true);
    this.onSelect([...this.selected]);
  }

  setSelection(names) {
    this.selected = new Set(names || []);
    this._paint(true);
  }

  _key(e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "c" && this.selected.size && !String(window.getSelection() || "")) {
      // Ctrl/Cmd+C on the table copies the selected kernels' full names.
      e.preventDefault();
      copyText([...this.selected].join("\n"));
      return;
    }
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const kernels = this.rows.filter((r) => r.type === "kernel");
    if (!kernels.length) return;
    const names = kernels.map((r) => this.model.tables.kernels.strings.name[r.a.name]);
    const cur = names.findIndex((n) => this.selected.has(n));
    const next = Math.max(0, Math.min(names.length - 1, cur + (e.key === "ArrowDown" ? 1 : -1)));
    e.preventDefault();
    this.selected = new Set([names[next]]);
    this.scrollTo(names[next]);
    this.onSelect([...this.selected]);
  }

  /** The rows the filters leave (every one, not only --top's), as CSV: raw numbers, full names. */
  toCSV() {
    const m = this.model;
    const k = m.tables.kernels;
    const { rows } = this.matchingRows();
    const grouped = this.state.groupBy !== "none";
    const head = [...(grouped ? [this.state.groupBy === "op" ? "cpu_op" : "group_backend"] : []),
      "name", "short_name", "backend", "launches", "total_us", "mean_us", "median_us", "min_us", "max_us", "std_us", "share",
      "theoretical_occupancy_min", "theoretical_occupancy_max", "occupancy_limiter", "grid", "grid_blocks_min",
      "grid_blocks_max", "block", "registers_per_thread_min", "registers_per_thread_max", "shared_mem_bytes_min",
      "shared_mem_bytes_max", "waves_min", "waves_max"];
    const lo = (r) => (r ? r[0] : null), top = (r) => (r ? r[1] : null);
    const body = rows.map((a) => [
      ...(grouped ? [groupLabel(m, this.state.groupBy, a.group)] : []),
      k.strings.name[a.name], m.header.names[a.name] || "", str(k, "backend", a.first) || "", a.launches,
      +a.total.toFixed(3), +a.mean.toFixed(3), +a.median.toFixed(3), +a.min.toFixed(3), +a.max.toFixed(3),
      +a.std.toFixed(3), +a.share.toFixed(6),
      lo(a.occ) === null ? null : +lo(a.occ).toFixed(4), top(a.occ) === null ? null : +top(a.occ).toFixed(4),
      a.occ && a.occ[0] === a.occ[1] ? str(k, "occupancy_limiter", a.first) : "",
      a.gridVaries ? "mixed" : dims(k, "grid", a.first).replace(/×/g, "x"), lo(a.blocks), top(a.blocks),
      a.blockVaries ? "mixed" : dims(k, "block", a.first).replace(/×/g, "x"),
      lo(a.regs), top(a.regs), lo(a.smem), top(a.smem),
      lo(a.waves) === null ? null : +lo(a.waves).toFixed(4), top(a.waves) === null ? null : +top(a.waves).toFixed(4)]);
    return toCSV(head, body);
  }

  exportCSV() {
    download(`${fileStem(this.model.header.title)}-kernels.csv`, this.toCSV(), "text/csv;charset=utf-8");
  }
}

export function dims(k, which, i) {
  const x = int(k, `${which}_x`, i), y = int(k, `${which}_y`, i) ?? 1, z = int(k, `${which}_z`, i) ?? 1;
  if (x === null) return "-";
  // 1-D launches read best as one number; the details panel always shows x×y×z.
  return z !== 1 ? `${x}×${y}×${z}` : y !== 1 ? `${x}×${y}` : String(x);
}

function fmtOpt(v) { return v === null ? "-" : String(v); }

function pct100(v) { return v === null || v === undefined || Number.isNaN(v) ? "-" : `${v.toFixed(0)}%`; }

function smemText(b) {
  if (b === null) return "-";
  return b === 0 ? "0 B" : fmtBytes(b);
}
