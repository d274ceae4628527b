// The kernel table: one row per kernel name (per group), expandable to its launches.
// Aggregation runs over the launch columns in one pass; only the visible rows are in the DOM
// (fixed row height), so 100k launches scroll as smoothly as 100.
import { h, fmtUs, fmtPct, fmtInt, fmtBytes, fmtNum, backendColor, vocab } from "./format.js";
import { str, int, num } from "./data.js";

export const ROW_H = 24;

export const COLUMNS = [
  { key: "expand", label: "", width: 22, sortable: false },
  { key: "short", label: "Kernel", width: 150, flex: true, align: "left", title: "readable name; hover a row for the full name as recorded" },
  { key: "backend", label: "Backend", width: 80, align: "left", title: "library that launched the kernel (kernelscope's rules: name, CPU op, launch API)" },
  { key: "launches", label: "Launches", width: 64 },
  { key: "total", label: "Total", width: 70, title: "sum of kernel durations measured by CUPTI" },
  { key: "mean", label: "Mean", width: 66, title: "mean kernel duration (CUPTI)" },
  { key: "share", label: "Share", width: 90, title: "share of all kernel time" },
  { key: "grid", label: "Grid", width: 76, sortable: false },
  { key: "block", label: "Block", width: 60, sortable: false },
  { key: "regs", label: "Regs", width: 46, title: "registers per thread (recorded by CUPTI)" },
  { key: "smem", label: "Smem", width: 64, title: "shared memory per block, static + dynamic (CUPTI)" },
  { key: "occ", label: "Occupancy", width: 118, title: "theoretical occupancy computed by kernelscope (CUDA occupancy calculator) and what limits it" },
  { key: "waves", label: "Waves", width: 50, title: "grid blocks / (active blocks per SM x SMs), computed" },
];
// The kernel column takes the room left; the others keep their width.
const TEMPLATE = COLUMNS.map((c) => (c.flex ? `minmax(${c.width}px, 1fr)` : `${c.width}px`)).join(" ");
export const MIN_WIDTH = COLUMNS.reduce((a, c) => a + c.width, 0);
/** A limiter such as "registers+shared_mem" in a few letters for the table cell (the short
 * forms of kernelscope.analysis.occupancy.LIMITERS, from the payload). */
function shortLimiter(lim) {
  const short = vocab("limiters");
  return lim ? lim.split("+").map((x) => short[x] || x).join("+") : "";
}

/** Per-(group, kernel name) statistics over the launches. */
export function aggregate(model, groupBy) {
  const k = model.tables.kernels;
  const n = k.rows;
  const nameCodes = k.cols.name;
  const groupCodes = groupBy === "backend" ? k.cols.backend : groupBy === "op" ? k.cols.op : null;
  const dur = k.cols.duration_us;
  const byKey = new Map();
  let total = 0;
  for (let i = 0; i < n; i++) {
    const g = groupCodes ? groupCodes[i] : 0;
    const key = g * 1e7 + nameCodes[i];
    let a = byKey.get(key);
    if (!a) {
      a = { group: g, name: nameCodes[i], launches: 0, total: 0, min: Infinity, max: -Infinity,
            first: i, launchIdx: [], gridVaries: false, cfgVaries: false };
      byKey.set(key, a);
    }
    const d = dur[i];
    a.launches++; a.total += d; total += d;
    if (d < a.min) a.min = d;
    if (d > a.max) a.max = d;
    a.launchIdx.push(i);
    const f = a.first;
    if (!a.gridVaries && (k.cols.grid_x[i] !== k.cols.grid_x[f] || k.cols.grid_y[i] !== k.cols.grid_y[f]
        || k.cols.grid_z[i] !== k.cols.grid_z[f])) a.gridVaries = true;
    if (!a.cfgVaries && k.cols.config[i] !== k.cols.config[f]) a.cfgVaries = true;
  }
  const rows = [...byKey.values()];
  for (const a of rows) {
    a.mean = a.total / a.launches;
    a.share = total > 0 ? a.total / total : 0;
  }
  return { rows, total };
}

function groupLabel(model, groupBy, code) {
  if (!groupBy || groupBy === "none") return "";
  const s = model.tables.kernels.strings[groupBy === "backend" ? "backend" : "op"];
  return code >= 0 ? s[code] : groupBy === "op" ? "(no CPU op)" : "(unknown)";
}

/** The sort key of an aggregate row for a column. */
function sortValue(model, a, key) {
  const k = model.tables.kernels;
  const f = a.first;
  switch (key) {
    case "short": return (model.header.names[a.name] || "").toLowerCase();
    case "backend": return (str(k, "backend", f) || "").toLowerCase();
    case "launches": return a.launches;
    case "total": case "share": return a.total;
    case "mean": return a.mean;
    case "max": return a.max;
    case "regs": return int(k, "registers_per_thread", f) ?? -1;
    case "smem": return int(k, "shared_mem_bytes", f) ?? -1;
    case "occ": return num(k, "theoretical_occupancy", f) ?? -1;
    case "waves": return num(k, "waves", f) ?? -1;
    default: return a.total;
  }
}

export class KernelTable {
  constructor(model, { onSelect, height = 360 } = {}) {
    this.model = model;
    this.onSelect = onSelect || (() => {});
    // %%kernelprofile --sort / --top choose the first view; every column still sorts.
    const view = model.header.view || {};
    const sort = { total: "total", mean: "mean", max: "max", launches: "launches", name: "short" }[view.sort] || "total";
    this.state = { sort, desc: sort !== "short", filter: "", backend: "", groupBy: "none" };
    this.top = view.top > 0 ? view.top : null;
    this.expanded = new Set();
    this.collapsedGroups = new Set();
    this.selected = new Set();
    this.el = h("div", { class: "ks-table" });
    this.toolbar = this._toolbar();
    this.head = h("div", { class: "ks-row ks-head", style: `grid-template-columns:${TEMPLATE};min-width:${MIN_WIDTH}px` },
      COLUMNS.map((c) => {
        const cell = h("div", { class: `ks-cell ks-h-${c.key}${c.align === "left" ? " ks-left" : ""}`,
          "data-col": c.key, text: c.label,
          title: [c.title, c.sortable === false ? null : "click to sort"].filter(Boolean).join(" · ") || null });
        if (c.sortable !== false) cell.addEventListener("click", () => this.sortBy(c.key));
        return cell;
      }));
    this.spacer = h("div", { class: "ks-spacer" });
    this.maxHeight = height;
    this.body = h("div", { class: "ks-body", style: `height:${height}px;min-width:${MIN_WIDTH}px`, tabindex: "0" }, this.spacer);
    this.body.addEventListener("scroll", () => this._schedule());
    this.body.addEventListener("keydown", (e) => this._key(e));
    this.status = h("div", { class: "ks-table-status" });
    this.el.append(this.toolbar, h("div", { class: "ks-hscroll" }, this.head, this.body), this.status);
    this.aggCache = {};
    this.refresh();
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
    return h("div", { class: "ks-toolbar" }, this.filterInput, this.backendSelect, this.groupSelect);
  }

  sortBy(key) {
    if (this.state.sort === key) this.state.desc = !this.state.desc;
    else { this.state.sort = key; this.state.desc = !["short", "backend"].includes(key); }
    this.refresh();
  }

  setFilter(text) { this.filterInput.value = text; this.state.filter = text; this.refresh(); }

  /** Rebuild the flat row list (groups, kernels, expanded launches) and repaint. */
  refresh() {
    const m = this.model;
    const k = m.tables.kernels;
    const { groupBy, filter, backend, sort, desc } = this.state;
    const agg = this.aggCache[groupBy] || (this.aggCache[groupBy] = aggregate(m, groupBy));
    const q = filter.trim().toLowerCase();
    const names = k.strings.name || [];
    let rows = agg.rows.filter((a) => {
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
    this.visibleKernels = rows.length;
    this.spacer.style.height = `${flat.length * ROW_H}px`;
    this.body.style.height = `${Math.max(3, Math.min(flat.length, Math.floor(this.maxHeight / ROW_H))) * ROW_H + 2}px`;
    for (const c of this.head.children) {
      const col = c.getAttribute("data-col");
      c.classList.toggle("ks-sorted", col === sort);
      c.setAttribute("aria-sort", col === sort ? (desc ? "descending" : "ascending") : "none");
      const def = COLUMNS.find((x) => x.key === col);
      c.textContent = def.label + (col === sort ? (desc ? " ▼" : " ▲") : "");
    }
    const total = agg.rows.length;
    this.status.textContent = `${rows.length} of ${total} kernel rows`
      + (k.rows ? ` · ${fmtInt(k.rows)} launches` : "") + (q || backend ? " (filtered)" : "");
    if (rows.length < matching) {
      this.status.append(" · ", h("a", { class: "ks-show-all", href: "#", text: `show all ${matching}`,
        onclick: (e) => { e.preventDefault(); this.top = null; this.refresh(); } }));
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

  _rowEl(row, r) {
    const style = `top:${r * ROW_H}px;grid-template-columns:${TEMPLATE}`;
    if (row.type === "group") {
      const open = !this.collapsedGroups.has(row.g.code);
      const el = h("div", { class: "ks-row ks-group", style, role: "row" },
        h("div", { class: "ks-cell ks-group-label", text: `${open ? "▾" : "▸"} ${row.label}` }),
        h("div", { class: "ks-cell", text: `${row.g.rows.length} kernels · ${fmtInt(row.g.launches)} launches · ${fmtUs(row.g.total)} · ${fmtPct(row.share)}` }));
      el.addEventListener("click", () => {
        if (open) this.collapsedGroups.add(row.g.code); else this.collapsedGroups.delete(row.g.code);
        this.refresh();
      });
      return el;
    }
    const m = this.model;
    const k = m.tables.kernels;
    const a = row.a;
    if (row.type === "launch") return this._launchEl(row, style);
    const f = a.first;
    const name = k.strings.name[a.name];
    const key = `${a.group}:${a.name}`;
    const open = this.expanded.has(key);
    const sel = this.selected.has(name);
    const bk = str(k, "backend", f) || "-";
    const grid = a.gridVaries ? "varies" : dims(k, "grid", f);
    const occ = num(k, "theoretical_occupancy", f);
    const lim = str(k, "occupancy_limiter", f);
    const el = h("div", { class: `ks-row ks-kernel${sel ? " ks-selected" : ""}`, style, role: "row",
      "data-name": name, "aria-selected": sel ? "true" : "false" },
      h("div", { class: "ks-cell ks-expand", text: open ? "▾" : "▸",
        title: open ? "hide launches" : "show launches" }),
      h("div", { class: "ks-cell ks-left ks-name", text: m.header.names[a.name] || name, title: name }),
      h("div", { class: "ks-cell ks-left" }, h("span", { class: "ks-swatch", style: `background:${backendColor(bk)}` }), bk),
      h("div", { class: "ks-cell", text: fmtInt(a.launches) }),
      h("div", { class: "ks-cell", text: fmtUs(a.total) }),
      h("div", { class: "ks-cell", text: fmtUs(a.mean) }),
      h("div", { class: "ks-cell ks-share" },
        h("span", { class: "ks-bar", style: `width:${Math.max(1, Math.round(a.share * 44))}px;background:${backendColor(bk)}` }),
        h("span", { text: fmtPct(a.share) })),
      h("div", { class: "ks-cell", text: grid, title: a.gridVaries ? "grid differs between launches: expand" : null }),
      h("div", { class: "ks-cell", text: a.cfgVaries ? "varies" : dims(k, "block", f) }),
      h("div", { class: "ks-cell", text: a.cfgVaries ? "varies" : fmtOpt(int(k, "registers_per_thread", f)) }),
      h("div", { class: "ks-cell", text: a.cfgVaries ? "varies" : smemText(int(k, "shared_mem_bytes", f)) }),
      h("div", { class: "ks-cell ks-occ", title: lim ? `limited by ${lim}` : null,
        text: a.cfgVaries ? "varies" : occ === null ? "-" : `${fmtPct(occ, 0)}${lim && occ < 1 ? ` ${shortLimiter(lim)}` : ""}` }),
      h("div", { class: "ks-cell", text: fmtNum(num(k, "waves", f), 2) }));
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
    return h("div", { class: "ks-row ks-launch", style, role: "row", "data-launch": String(i) },
      h("div", { class: "ks-cell" }),
      h("div", { class: "ks-cell ks-left", text: `@ ${fmtUs(k.cols.start_us[i])}  ${str(k, "device", i) || ""} s${int(k, "stream", i) ?? "?"}`,
        title: str(k, "source", i) || null }),
      h("div", { class: "ks-cell ks-left", text: op || "-", title: op || null }),
      h("div", { class: "ks-cell", text: "" }),
      h("div", { class: "ks-cell", text: fmtUs(dur) }),
      h("div", { class: "ks-cell", text: "" }),
      h("div", { class: "ks-cell", text: row.a.total ? fmtPct(dur / row.a.total) + " of kernel" : "" }),
      h("div", { class: "ks-cell", text: dims(k, "grid", i) }),
      h("div", { class: "ks-cell", text: dims(k, "block", i) }),
      h("div", { class: "ks-cell", text: fmtOpt(int(k, "registers_per_thread", i)) }),
      h("div", { class: "ks-cell", text: smemText(int(k, "shared_mem_bytes", i)) }),
      h("div", { class: "ks-cell", text: occ === null ? "-" : `${fmtPct(occ, 0)}${lim && occ < 1 ? ` ${shortLimiter(lim)}` : ""}`, title: lim ? `limited by ${lim}` : null }),
      h("div", { class: "ks-cell", text: fmtNum(num(k, "waves", i), 2) }));
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
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const kernels = this.rows.filter((r) => r.type === "kernel");
    if (!kernels.length) return;
    const names = kernels.map((r) => this.model.tables.kernels.strings.name[r.a.name]);
    const cur = names.findIndex((n) => this.selected.has(n));
    const next = Math.max(0, Math.min(names.length - 1, cur + (e.key === "ArrowDown" ? 1 : -1)));
    e.preventDefault();
    this.selected = new Set([names[next]]);
    this._paint(true);
    this.onSelect([...this.selected]);
  }
}

function dims(k, which, i) {
  const x = int(k, `${which}_x`, i), y = int(k, `${which}_y`, i) ?? 1, z = int(k, `${which}_z`, i) ?? 1;
  if (x === null) return "-";
  // 1-D launches read best as one number; the details panel always shows x×y×z.
  return z !== 1 ? `${x}×${y}×${z}` : y !== 1 ? `${x}×${y}` : String(x);
}

function fmtOpt(v) { return v === null ? "-" : String(v); }

function smemText(b) {
  if (b === null) return "-";
  return b === 0 ? "0" : fmtBytes(b);
}
