// The kernel table's rows (table.js) as DOM: a group header, a kernel's row (its aggregate
// figures, table_stats.js) and, expanded under it, a row per launch (that launch's columns, as
// kernelscope/view/report.py sends them). Each takes the KernelTable, whose state (expanded rows,
// collapsed groups, selection, columns shown) they read and whose clicks they report.
import { h, fmtUs, fmtPct, fmtInt, fmtNum, backendColor } from "./format.js";
import { str, int, num } from "./data.js";
import { shapeCells, dims, shortLimiter, fmtOpt, smemText } from "./table_stats.js";

/** A group's header row: its kernels, launches, time and share; a click folds or unfolds it. */
export function groupRow(table, row, style) {
  const open = !table.collapsedGroups.has(row.g.code);
  const el = h(
    "div",
    { class: "ks-row ks-group", style, role: "row" },
    h("div", { class: "ks-cell ks-group-label", text: `${open ? "▾" : "▸"} ${row.label}` }),
    h("div", {
      class: "ks-cell",
      text: `${row.g.rows.length} kernels · ${fmtInt(row.g.launches)} launches · ${fmtUs(row.g.total)} · ${fmtPct(row.share)} of kernel time`,
    })
  );
  el.addEventListener("click", () => {
    if (open) table.collapsedGroups.add(row.g.code);
    else table.collapsedGroups.delete(row.g.code);
    table.refresh();
  });
  return el;
}

/** A kernel's row: its expander (shows its launches) and its figures; a click selects it. */
export function kernelRow(table, row, style) {
  const k = table.model.tables.kernels;
  const a = row.a;
  const name = k.strings.name[a.name];
  const key = `${a.group}:${a.name}`;
  const open = table.expanded.has(key);
  const sel = table.selected.has(name);
  const cells = kernelCells(table.model, a, open, name);
  const el = h(
    "div",
    {
      class: `ks-row ks-kernel${sel ? " ks-selected" : ""}`,
      style,
      role: "row",
      "data-name": name,
      "aria-selected": sel ? "true" : "false",
    },
    table.columns.map((c) => cells[c.key])
  );
  el.firstChild.addEventListener("click", (e) => {
    e.stopPropagation();
    if (open) table.expanded.delete(key);
    else table.expanded.add(key);
    table.refresh();
  });
  el.addEventListener("click", (e) => table.select(name, e.ctrlKey || e.metaKey || e.shiftKey));
  return el;
}

/** The cells of a kernel's row by column key. */
function kernelCells(m, a, open, name) {
  const bk = str(m.tables.kernels, "backend", a.first) || "-";
  const sh = shapeCells(m, a);
  const cells = {
    expand: h("div", {
      class: "ks-cell ks-expand",
      text: open ? "▾" : "▸",
      title: open ? "hide launches" : "show launches",
    }),
    short: h("div", { class: "ks-cell ks-left ks-name", text: m.header.names[a.name] || name, title: name }),
    backend: h(
      "div",
      { class: "ks-cell ks-left" },
      h("span", { class: "ks-swatch", style: `background:${backendColor(bk)}` }),
      bk
    ),
    launches: h("div", { class: "ks-cell", text: fmtInt(a.launches) }),
    total: h("div", { class: "ks-cell", text: fmtUs(a.total) }),
    mean: h("div", {
      class: "ks-cell",
      text: fmtUs(a.mean),
      title: a.launches > 1 ? `min ${fmtUs(a.min)} · max ${fmtUs(a.max)}` : null,
    }),
    share: h(
      "div",
      { class: "ks-cell ks-share" },
      h("span", {
        class: "ks-bar",
        style: `width:${Math.max(1, Math.round(a.share * 36))}px;background:${backendColor(bk)}`,
      }),
      h("span", { text: fmtPct(a.share) })
    ),
    median: h("div", { class: "ks-cell", text: fmtUs(a.median) }),
    min: h("div", { class: "ks-cell", text: fmtUs(a.min) }),
    max: h("div", { class: "ks-cell", text: fmtUs(a.max) }),
    std: h("div", { class: "ks-cell", text: fmtUs(a.std) }),
    sm_active: h("div", { class: "ks-cell", text: fmtPct(a.sm_active, 0, 100) }),
    tensor: h("div", { class: "ks-cell", text: fmtPct(a.tensor, 0, 100) }),
    dram: h("div", { class: "ks-cell", text: fmtPct(a.dram, 0, 100) }),
    stall: h("div", {
      class: "ks-cell ks-left",
      text: a.stall || "-",
      title: a.stall ? (((m.header.stalls || {}).reasons || {})[a.stall] || {}).title || null : null,
    }),
  };
  for (const c of ["grid", "block", "regs", "smem", "waves", "occ"]) {
    cells[c] = h("div", {
      class: `ks-cell${c === "occ" ? " ks-occ" : ""}${sh[c].varies ? " ks-varies" : ""}`,
      text: sh[c].text,
      title: sh[c].title,
    });
  }
  return cells;
}

/** A launch's row under its kernel: that launch's start, stream, CPU op and columns. */
export function launchRow(table, row, style) {
  const cells = launchCells(table.model, row, table.aggTotal);
  return h(
    "div",
    { class: "ks-row ks-launch", style, role: "row", "data-launch": String(row.i) },
    table.columns.map((c) => cells[c.key])
  );
}

function launchCells(model, row, aggTotal) {
  const k = model.tables.kernels;
  const i = row.i;
  const op = str(k, "op", i);
  const dur = k.cols.duration_us[i];
  const occ = num(k, "theoretical_occupancy", i);
  const lim = str(k, "occupancy_limiter", i);
  return {
    expand: h("div", { class: "ks-cell" }),
    // Start, stream and CPU op in the wide name column: the narrow ones hold numbers only.
    // A replay's start times are not a timeline (header.capabilities): no "@ time" for its launches.
    short: h("div", {
      class: "ks-cell ks-left",
      text:
        `${
          (model.header.capabilities || {}).timeline === false ? "" : `@ ${fmtUs(k.cols.start_us[i])}  `
        }${str(k, "device", i) || ""} s${int(k, "stream", i) ?? "?"}` + `  ·  ${op || "(no CPU op)"}`,
      title: [op ? `CPU op: ${op}` : null, str(k, "source", i)].filter(Boolean).join("\n") || null,
    }),
    backend: h("div", { class: "ks-cell" }),
    launches: h("div", { class: "ks-cell" }),
    total: h("div", {
      class: "ks-cell",
      text: fmtUs(dur),
      title: `this launch's duration (${(model.header.capabilities || {}).duration_source || "CUPTI"})`,
    }),
    mean: h("div", { class: "ks-cell" }),
    // The column's meaning on every row: share of all kernel time; of its kernel in the title.
    share: h("div", {
      class: "ks-cell",
      text: aggTotal ? fmtPct(dur / aggTotal) : "",
      title: `this launch's share of all kernel time${row.a.total ? `; ${fmtPct(dur / row.a.total)} of this kernel's time` : ""}`,
    }),
    median: h("div", { class: "ks-cell" }),
    min: h("div", { class: "ks-cell" }),
    max: h("div", { class: "ks-cell" }),
    std: h("div", { class: "ks-cell" }),
    sm_active: h("div", { class: "ks-cell", text: fmtPct(num(k, "sm_active_pct", i), 0, 100) }),
    tensor: h("div", { class: "ks-cell", text: fmtPct(num(k, "tensor_pct", i), 0, 100) }),
    dram: h("div", { class: "ks-cell", text: fmtPct(num(k, "dram_pct", i), 0, 100) }),
    stall: h("div", { class: "ks-cell ks-left", text: str(k, "top_stall", i) || "" }),
    grid: h("div", { class: "ks-cell", text: dims(k, "grid", i) }),
    block: h("div", { class: "ks-cell", text: dims(k, "block", i) }),
    regs: h("div", { class: "ks-cell", text: fmtOpt(int(k, "registers_per_thread", i)) }),
    smem: h("div", { class: "ks-cell", text: smemText(int(k, "shared_mem_bytes", i)) }),
    occ: h("div", {
      class: "ks-cell",
      text: occ === null ? "-" : `${fmtPct(occ, 0)}${lim && occ < 1 ? ` ${shortLimiter(lim)}` : ""}`,
      title: lim ? `limited by ${lim}` : null,
    }),
    waves: h("div", { class: "ks-cell", text: fmtNum(num(k, "waves", i), 2) }),
  };
}
