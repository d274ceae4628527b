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
//
// The figures (aggregation, launch-shape ranges, filter and sort, CSV rows) are table_stats.js,
// with no DOM; the rows' cells are table_rows.js. The launch columns it reads: the payload's
// kernels table (kernelscope/view/report.py).
import { h, fmtUs, fmtPct, fmtInt } from "./format.js";
import { download, copyText, toCSV, fileStem } from "./files.js";
import { aggregate, filterRows, flatRows, csvRows } from "./table_stats.js";
import { groupRow, kernelRow, launchRow } from "./table_rows.js";
import { counterTracks } from "./measured.js";

export const ROW_H = 24;

// Widths fit each header label with its sort arrow (no cut headers at 12px bold).
/** A PM-sampled counter's column, labelled as the payload names it (trace/counters.py: DERIVED). */
function counterColumn(c, track) {
  const label = track.short.charAt(0).toUpperCase() + track.short.slice(1);
  return { ...c, label, title: `${track.label}: ${track.meaning} (time-weighted over the launches)` };
}

export const COLUMNS = [
  { key: "expand", label: "", width: 22, sortable: false },
  {
    key: "short",
    label: "Kernel",
    width: 220,
    flex: true,
    align: "left",
    title: "readable name; hover a row for the full name as recorded",
  },
  {
    key: "backend",
    label: "Backend",
    width: 86,
    align: "left",
    title: "library that launched the kernel (kernelscope's rules: name, CPU op, launch API)",
  },
  { key: "launches", label: "Launches", width: 84 },
  { key: "total", label: "Total", width: 76, title: "sum of kernel durations measured by CUPTI" },
  { key: "mean", label: "Mean", width: 72, title: "mean kernel duration (CUPTI)" },
  {
    key: "share",
    label: "Share",
    width: 80,
    title: "share of all kernel time (of the launches the table holds); a launch row: that launch's share",
  },
  {
    key: "occ",
    label: "Occupancy",
    width: 124,
    title: "theoretical occupancy computed by kernelscope (CUDA occupancy calculator) and what limits it",
  },
  // Sized to their values (ranges such as "1–128,000"): with the toggle on, a notebook's ~960 px
  // output area scrolls sideways and the Kernel column stays in view (style.css, --ks-sx).
  { key: "grid", label: "Grid", width: 96, shape: true, title: "grid blocks (x×y×z); a range when launches differ" },
  {
    key: "block",
    label: "Block",
    width: 70,
    shape: true,
    sortable: false,
    title: "threads per block (x×y×z), recorded by CUPTI",
  },
  { key: "regs", label: "Regs", width: 58, shape: true, title: "registers per thread (recorded by CUPTI)" },
  { key: "smem", label: "Smem", width: 80, shape: true, title: "shared memory per block, static + dynamic (CUPTI)" },
  {
    key: "waves",
    label: "Waves",
    width: 84,
    shape: true,
    title: "grid blocks / (active blocks per SM x SMs), computed",
  },
  // Per-kernel duration statistics, as rep.summary() and Nsight Systems' kernel summary (behind "statistics").
  { key: "median", label: "Median", width: 74, stats: true, title: "median launch duration" },
  { key: "min", label: "Min", width: 70, stats: true, title: "shortest launch" },
  { key: "max", label: "Max", width: 70, stats: true, title: "longest launch" },
  {
    key: "std",
    label: "Std dev",
    width: 74,
    stats: true,
    title: "standard deviation of the launch durations (sample, as rep.summary()'s std_us)",
  },
  // What the hardware measured, where the report has it: PM-sampled counters time-weighted over
  // the kernel's launches (as analysis/counters.py: kernel_counters), and the top warp stall.
  {
    key: "sm_active",
    label: "SM active",
    width: 84,
    measured: "sm_active_pct",
    title: "SMs active, % of peak (CUPTI PM sampling, time-weighted over the launches)",
  },
  {
    key: "tensor",
    label: "Tensor",
    width: 72,
    measured: "tensor_pct",
    title: "tensor pipe busy, % of peak (CUPTI PM sampling, time-weighted over the launches)",
  },
  {
    key: "dram",
    label: "DRAM",
    width: 68,
    measured: "dram_pct",
    title: "DRAM throughput, % of peak (CUPTI PM sampling, time-weighted over the launches)",
  },
  {
    key: "stall",
    label: "Top stall",
    width: 130,
    measured: "top_stall",
    align: "left",
    title: "the warp-stall reason with the most samples (Nsight Compute or Proton; of the kernel's longest launch)",
  },
];
const NAME_MIN = 120;
// The Kernel column's least width with the launch-shape columns shown.
const SHAPES_NAME_MIN = 160;

export class KernelTable {
  constructor(model, { onSelect, height = 360 } = {}) {
    this.model = model;
    this.onSelect = onSelect || (() => {});
    // %%kernelprofile --sort / --top choose the first view; every column still sorts.
    const view = model.header.view || {};
    const sort =
      { total: "total", mean: "mean", max: "max", launches: "launches", name: "short" }[view.sort] || "total";
    this.state = {
      sort,
      desc: sort !== "short",
      filter: "",
      backend: "",
      groupBy: "none",
      shapes: false,
      stats: false,
      launches: null,
      label: "",
    };
    this.top = view.top > 0 ? view.top : null;
    this.nameWidth = null; // set when the user drags the Kernel column's edge
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
    const tracks = Object.fromEntries(counterTracks(this.model).map((tr) => [tr.column, tr]));
    return COLUMNS.filter(
      (c) => (!c.shape || this.state.shapes) && (!c.stats || this.state.stats) && (!c.measured || cols[c.measured])
    ).map((c) => (tracks[c.measured] ? counterColumn(c, tracks[c.measured]) : c));
  }

  _template() {
    return this.columns
      .map((c) =>
        c.flex ? (this.nameWidth ? `${this.nameWidth}px` : `minmax(${this._nameMin()}px, 1fr)`) : `${c.width}px`
      )
      .join(" ");
  }

  _nameMin() {
    return this.state.shapes ? SHAPES_NAME_MIN : COLUMNS.find((c) => c.flex).width;
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
      const cell = h("div", {
        class: `ks-cell ks-h-${c.key}${c.align === "left" ? " ks-left" : ""}`,
        role: "columnheader",
        "data-col": c.key,
        title:
          [
            c.title && ["total", "mean"].includes(c.key) ? c.title.replace("CUPTI", by) : c.title,
            c.sortable === false ? null : "click to sort",
          ]
            .filter(Boolean)
            .join(" · ") || null,
      });
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
    grip.addEventListener("dblclick", (e) => {
      e.stopPropagation();
      this.nameWidth = null;
      this._layout();
      this.refresh();
    });
    grip.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      e.stopPropagation();
      const x0 = e.clientX,
        w0 = cell.getBoundingClientRect().width;
      const move = (ev) => {
        this.nameWidth = Math.max(NAME_MIN, Math.round(w0 + ev.clientX - x0));
        this._layout();
        this._paint(true);
      };
      const up = () => {
        window.removeEventListener("pointermove", move);
        window.removeEventListener("pointerup", up);
        this.refresh();
      };
      window.addEventListener("pointermove", move);
      window.addEventListener("pointerup", up);
    });
    return grip;
  }

  _toolbar() {
    const backends = [...new Set(this.model.tables.kernels.strings.backend || [])].sort();
    this.filterInput = h("input", {
      class: "ks-filter",
      type: "search",
      placeholder: "filter kernels, ops…",
      "aria-label": "filter kernels",
    });
    this.filterInput.addEventListener("input", () => {
      this.state.filter = this.filterInput.value;
      this.refresh();
    });
    this.backendSelect = h(
      "select",
      { class: "ks-backend-filter", "aria-label": "backend" },
      h("option", { value: "", text: "all backends" }),
      backends.map((b) => h("option", { value: b, text: b }))
    );
    this.backendSelect.addEventListener("change", () => {
      this.state.backend = this.backendSelect.value;
      this.refresh();
    });
    this.groupSelect = h(
      "select",
      { class: "ks-group-by", "aria-label": "group by" },
      h("option", { value: "none", text: "no grouping" }),
      h("option", { value: "backend", text: "group by backend" }),
      h("option", { value: "op", text: "group by CPU op" })
    );
    this.groupSelect.addEventListener("change", () => {
      this.state.groupBy = this.groupSelect.value;
      this.refresh();
    });
    this.shapeToggle = h("button", {
      class: "ks-btn ks-shape-toggle",
      "aria-pressed": "false",
      title: "show the launch-shape columns: grid, block, registers, shared memory, waves",
      text: "launch shape",
      onclick: () => this.apply({ shapes: !this.state.shapes }),
    });
    this.statsToggle = h("button", {
      class: "ks-btn ks-stats-toggle",
      "aria-pressed": "false",
      title: "show the duration statistics: median, min, max, standard deviation (as rep.summary())",
      text: "statistics",
      onclick: () => this.apply({ stats: !this.state.stats }),
    });
    const csv = h("button", {
      class: "ks-btn ks-export-csv",
      text: "CSV",
      title: "download the rows the filters leave, as CSV (times in microseconds, sizes in bytes)",
      onclick: () => this.exportCSV(),
    });
    return h(
      "div",
      { class: "ks-toolbar" },
      this.filterInput,
      this.backendSelect,
      this.groupSelect,
      this.shapeToggle,
      this.statsToggle,
      csv
    );
  }

  /** Set any of filter, backend, groupBy, sort, desc, select, launches (+ label), shapes. */
  apply(v = {}) {
    const s = this.state;
    if (v.filter !== undefined) {
      s.filter = v.filter || "";
      this.filterInput.value = s.filter;
    }
    if (v.backend !== undefined) {
      s.backend = v.backend || "";
      this.backendSelect.value = s.backend;
    }
    if (v.groupBy !== undefined) {
      s.groupBy = v.groupBy || "none";
      this.groupSelect.value = s.groupBy;
    }
    if (v.sort !== undefined) {
      s.sort = v.sort;
      s.desc = v.desc ?? !["short", "backend"].includes(v.sort);
    } else if (v.desc !== undefined) s.desc = !!v.desc;
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
      this.top = null; // a kernel asked for by name must be reachable
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
    else {
      this.state.sort = key;
      this.state.desc = !["short", "backend"].includes(key);
    }
    this.refresh();
  }

  setFilter(text) {
    return this.apply({ filter: text });
  }

  _agg() {
    const { groupBy, launches } = this.state;
    if (launches) return aggregate(this.model, groupBy, launches);
    if (!this.aggCache[groupBy]) this.aggCache[groupBy] = aggregate(this.model, groupBy);
    return this.aggCache[groupBy];
  }

  /** The aggregate rows the filters leave, sorted (before --top cuts them). */
  matchingRows() {
    const agg = this._agg();
    return { rows: filterRows(this.model, agg.rows, this.state), agg };
  }

  /** Rebuild the flat row list (groups, kernels, expanded launches) and repaint. */
  refresh() {
    const { rows: matched, agg } = this.matchingRows();
    let rows = matched;
    if (this.top && rows.length > this.top) rows = rows.slice(0, this.top);
    const flat = flatRows(this.model, rows, {
      groupBy: this.state.groupBy,
      total: agg.total,
      expanded: this.expanded,
      collapsed: this.collapsedGroups,
    });
    this.rows = flat;
    this.aggTotal = agg.total;
    this.visibleKernels = rows.length;
    this.spacer.style.height = `${flat.length * ROW_H}px`;
    this.body.style.height = `${Math.max(3, Math.min(flat.length, Math.floor(this.maxHeight / ROW_H))) * ROW_H + 2}px`;
    this._sortArrows();
    this._status(matched, rows.length);
    this._paint(true);
  }

  /** The header cells say which column sorts, and which way. */
  _sortArrows() {
    const { sort, desc } = this.state;
    for (const c of this.head.children) {
      const col = c.getAttribute("data-col");
      c.classList.toggle("ks-sorted", col === sort);
      c.setAttribute("aria-sort", col === sort ? (desc ? "descending" : "ascending") : "none");
      const def = this.columns.find((x) => x.key === col);
      c.querySelector(".ks-h-label").textContent = def.label + (col === sort ? (desc ? " ▼" : " ▲") : "");
    }
  }

  /** The status line: what the rows shown hold, of the whole report (kernel rows, launches and
   * kernel time), with links to show every row (past --top) and to clear the filters. */
  _status(matched, shown) {
    const k = this.model.tables.kernels;
    const { filter, backend, launches } = this.state;
    const matching = matched.length;
    if (!this.aggCache.none) this.aggCache.none = aggregate(this.model, "none");
    const allAgg = this.aggCache.none;
    const filtered = !!(filter.trim() || backend || launches);
    let shownLaunches = 0,
      shownTime = 0;
    for (const a of matched) {
      shownLaunches += a.launches;
      shownTime += a.total;
    }
    this.status.textContent = "";
    this.status.append(
      filtered
        ? `${fmtInt(matching)} of ${fmtInt(allAgg.rows.length)} kernel rows · ${fmtInt(shownLaunches)} of ${fmtInt(k.rows)} launches · `
            + `${fmtUs(shownTime)} of ${fmtUs(allAgg.total)} kernel time (${fmtPct(allAgg.total ? shownTime / allAgg.total : 0)}) · filtered`
            + (launches ? ` to the launches ${this.state.label}` : "")
        : `${fmtInt(shown)} of ${fmtInt(allAgg.rows.length)} kernel rows · ${fmtInt(k.rows)} launches · ${fmtUs(allAgg.total)} kernel time`
    );
    if (shown < matching) {
      this.status.append(
        " · ",
        h("a", {
          class: "ks-show-all",
          href: "#",
          text: `show all ${matching}`,
          onclick: (e) => {
            e.preventDefault();
            this.top = null;
            this.refresh();
          },
        })
      );
    }
    if (filtered) {
      this.status.append(
        " · ",
        h("a", {
          class: "ks-clear-filter",
          href: "#",
          text: "clear",
          onclick: (e) => {
            e.preventDefault();
            this.apply({ filter: "", backend: "", launches: null });
          },
        })
      );
    }
  }

  _schedule() {
    if (this._raf) return;
    this._raf = requestAnimationFrame(() => {
      this._raf = null;
      this._paint(false);
    });
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
    const top = r * ROW_H,
      h0 = this.body.clientHeight || this.maxHeight;
    if (top < this.body.scrollTop || top + ROW_H > this.body.scrollTop + h0)
      this.body.scrollTop = Math.max(0, top - h0 / 3);
    this._paint(true);
  }

  _rowEl(row, r) {
    const style = `top:${r * ROW_H}px;grid-template-columns:${this.template}`;
    if (row.type === "group") return groupRow(this, row, style);
    if (row.type === "launch") return launchRow(this, row, style);
    return kernelRow(this, row, style);
  }

  /** Select a kernel by full name (toggle adds to / removes from a multi-selection). */
  select(name, toggle = false) {
    if (toggle) {
      if (this.selected.has(name)) this.selected.delete(name);
      else this.selected.add(name);
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
    const [head, body] = csvRows(this.model, this.matchingRows().rows, this.state.groupBy);
    return toCSV(head, body);
  }

  exportCSV() {
    download(`${fileStem(this.model.header.title)}-kernels.csv`, this.toCSV(), "text/csv;charset=utf-8");
  }
}
