// The kernel table's figures, with no DOM: per (group, kernel name) statistics over the launch
// columns in one pass (launches, total, mean, median, min, max, std dev, share; PM counters
// time-weighted over the launches; the longest launch's top stall), the launch-shape ranges of a
// set of launches, the filter and sort of the rows, and the rows of the CSV export. Python's
// figures they match: rep.summary() (kernelscope/analysis/summary.py) and kernel_counters
// (kernelscope/analysis/counters.py); the launch columns: kernelscope/view/report.py.
import { fmtPct, fmtInt, fmtBytes, fmtNum, vocab } from "./format.js";
import { str, int, num } from "./data.js";

// The table's PM-counter columns and the launch columns they are time-weighted from.
const COUNTER_KEYS = { sm_active: "sm_active_pct", tensor: "tensor_pct", dram: "dram_pct" };

/** A limiter such as "registers+shared_mem" in a few letters for the table cell (the short
 * forms of kernelscope.analysis.occupancy.LIMITERS, from the payload). */
export function shortLimiter(lim) {
  const short = vocab("limiters");
  return lim
    ? lim
        .split("+")
        .map((x) => short[x] || x)
        .join("+")
    : "";
}

function minMax(a, key, v) {
  if (v === null || v === undefined || Number.isNaN(v)) return;
  if (a[key] === null || v < a[key][0]) a[key] = [v, a[key] ? a[key][1] : v];
  if (v > a[key][1]) a[key][1] = v;
}

function newRow(g, name, i) {
  return {
    group: g,
    name,
    launches: 0,
    total: 0,
    min: Infinity,
    max: -Infinity,
    first: i,
    launchIdx: [],
    gridVaries: false,
    blockVaries: false,
    cfgVaries: false,
    blocks: null,
    regs: null,
    smem: null,
    waves: null,
    occ: null,
    m2: 0,
    longest: i,
    cw: {},
    cd: {},
  };
}

/** Launch i into its aggregate row `a`: duration statistics, counters, launch-shape ranges. */
function addLaunch(k, a, i, counters) {
  const c = k.cols;
  const d = c.duration_us[i];
  // Welford's running variance (one pass, no cancellation).
  const delta = d - a.total / Math.max(1, a.launches);
  a.launches++;
  a.total += d;
  a.m2 += delta * (d - a.total / a.launches);
  if (d < a.min) a.min = d;
  if (d > a.max) {
    a.max = d;
    a.longest = i;
  }
  for (const col of counters) {
    const v = c[col][i];
    if (!Number.isNaN(v)) {
      a.cw[col] = (a.cw[col] || 0) + v * d;
      a.cd[col] = (a.cd[col] || 0) + d;
    }
  }
  a.launchIdx.push(i);
  const f = a.first;
  if (!a.gridVaries && (c.grid_x[i] !== c.grid_x[f] || c.grid_y[i] !== c.grid_y[f] || c.grid_z[i] !== c.grid_z[f]))
    a.gridVaries = true;
  if (
    !a.blockVaries
    && (c.block_x[i] !== c.block_x[f] || c.block_y[i] !== c.block_y[f] || c.block_z[i] !== c.block_z[f])
  )
    a.blockVaries = true;
  if (!a.cfgVaries && c.shape[i] !== c.shape[f]) a.cfgVaries = true;
  const gx = int(k, "grid_x", i);
  if (gx !== null) minMax(a, "blocks", gx * (int(k, "grid_y", i) ?? 1) * (int(k, "grid_z", i) ?? 1));
  minMax(a, "regs", int(k, "registers_per_thread", i));
  minMax(a, "smem", int(k, "shared_mem_bytes", i));
  minMax(a, "waves", num(k, "waves", i));
  minMax(a, "occ", num(k, "theoretical_occupancy", i));
}

/** An aggregate row's figures once all its launches are in: mean, share of `total`, std dev,
 * median, the time-weighted counters and the longest launch's top stall. */
function finishRow(k, a, total) {
  const c = k.cols;
  a.mean = a.total / a.launches;
  a.share = total > 0 ? a.total / total : 0;
  a.std = a.launches > 1 ? Math.sqrt(Math.max(0, a.m2) / (a.launches - 1)) : 0;
  const ds = Float64Array.from(a.launchIdx, (i) => c.duration_us[i]).sort();
  const h2 = ds.length >> 1;
  a.median = ds.length % 2 ? ds[h2] : (ds[h2 - 1] + ds[h2]) / 2;
  for (const [key, col] of Object.entries(COUNTER_KEYS)) a[key] = a.cd[col] > 0 ? a.cw[col] / a.cd[col] : null;
  a.stall = c.top_stall ? str(k, "top_stall", a.longest) : null;
}

/** Per-(group, kernel name) statistics over the launches (all, or those with mask[i] set). */
export function aggregate(model, groupBy, mask = null) {
  const k = model.tables.kernels;
  const c = k.cols;
  const groupCodes = groupBy === "backend" ? c.backend : groupBy === "op" ? c.op : null;
  const counters = Object.values(COUNTER_KEYS).filter((col) => c[col]);
  const byKey = new Map();
  let total = 0,
    launches = 0;
  for (let i = 0; i < k.rows; i++) {
    if (mask && !mask[i]) continue;
    const g = groupCodes ? groupCodes[i] : 0;
    const key = g * 1e7 + c.name[i];
    let a = byKey.get(key);
    if (!a) {
      a = newRow(g, c.name[i], i);
      byKey.set(key, a);
    }
    addLaunch(k, a, i, counters);
    total += c.duration_us[i];
    launches++;
  }
  const rows = [...byKey.values()];
  for (const a of rows) finishRow(k, a, total);
  return { rows, total, launches };
}

export function groupLabel(model, groupBy, code) {
  if (!groupBy || groupBy === "none") return "";
  const s = model.tables.kernels.strings[groupBy === "backend" ? "backend" : "op"];
  return code >= 0 ? s[code] : groupBy === "op" ? "(no CPU op)" : "(unknown)";
}

const hi = (r) => (r ? r[1] : -1);

/** The sort key of an aggregate row for a column (a range sorts by its top). */
export function sortValue(model, a, key) {
  const k = model.tables.kernels;
  switch (key) {
    case "short":
      return (model.header.names[a.name] || "").toLowerCase();
    case "backend":
      return (str(k, "backend", a.first) || "").toLowerCase();
    case "launches":
      return a.launches;
    case "total":
    case "share":
      return a.total;
    case "mean":
      return a.mean;
    case "max":
      return a.max;
    case "median":
      return a.median;
    case "min":
      return a.min;
    case "std":
      return a.std;
    case "sm_active":
    case "tensor":
    case "dram":
      return a[key] ?? -1;
    case "stall":
      return a.stall || "";
    case "grid":
      return hi(a.blocks);
    case "regs":
      return hi(a.regs);
    case "smem":
      return hi(a.smem);
    case "occ":
      return hi(a.occ);
    case "waves":
      return hi(a.waves);
    default:
      return a.total;
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
      ? {
          text: a.blocks && a.blocks[0] !== a.blocks[1] ? rangeText(a.blocks, fmtInt) : "mixed",
          title: `${varies("the grid")}: ${rangeText(a.blocks, fmtInt)} blocks`,
          varies: true,
        }
      : { text: dims(k, "grid", f), title: null },
    block: a.blockVaries
      ? { text: "mixed", title: varies("the block size"), varies: true }
      : { text: dims(k, "block", f), title: null },
    regs: {
      text: rangeText(a.regs, String),
      title: a.regs && a.regs[0] !== a.regs[1] ? varies("registers per thread") : null,
    },
    smem: {
      text: rangeText(a.smem, smemText),
      title: a.smem && a.smem[0] !== a.smem[1] ? varies("shared memory per block") : null,
    },
    waves: {
      text: rangeText(a.waves, (v) => fmtNum(v, 2)),
      title: a.waves && a.waves[0] !== a.waves[1] ? varies("waves") : null,
    },
    occ:
      a.occ && a.occ[0] !== a.occ[1]
        ? {
            text: `${rangeText(a.occ, (v) => fmtPct(v, 0))}`,
            title: `${varies("theoretical occupancy")}; select the row for each launch shape`,
          }
        : {
            text: occ === null ? "-" : `${fmtPct(occ, 0)}${lim && occ < 1 ? ` ${shortLimiter(lim)}` : ""}`,
            title: lim ? `limited by ${lim}` : null,
          },
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
  const all = {
    ...rows[0],
    launches: 0,
    gridVaries: false,
    blockVaries: false,
    blocks: null,
    regs: null,
    smem: null,
    waves: null,
    occ: null,
  };
  for (const r of rows) {
    all.launches += r.launches;
    all.gridVaries =
      all.gridVaries
      || r.gridVaries
      || dims(model.tables.kernels, "grid", r.first) !== dims(model.tables.kernels, "grid", all.first);
    all.blockVaries =
      all.blockVaries
      || r.blockVaries
      || dims(model.tables.kernels, "block", r.first) !== dims(model.tables.kernels, "block", all.first);
    for (const key of ["blocks", "regs", "smem", "waves", "occ"])
      if (r[key]) {
        minMax(all, key, r[key][0]);
        minMax(all, key, r[key][1]);
      }
  }
  return all;
}

export function dims(k, which, i) {
  const x = int(k, `${which}_x`, i),
    y = int(k, `${which}_y`, i) ?? 1,
    z = int(k, `${which}_z`, i) ?? 1;
  if (x === null) return "-";
  // 1-D launches read best as one number; the details panel always shows x×y×z.
  return z !== 1 ? `${x}×${y}×${z}` : y !== 1 ? `${x}×${y}` : String(x);
}

export function fmtOpt(v) {
  return v === null ? "-" : String(v);
}

export function smemText(b) {
  if (b === null) return "-";
  return b === 0 ? "0 B" : fmtBytes(b);
}

/** The aggregate rows whose full name, readable name or CPU op holds `filter` (any case), of
 * `backend` when set, sorted by the column `sort` (ties: the costlier first). */
export function filterRows(model, rows, { filter, backend, sort, desc }) {
  const k = model.tables.kernels;
  const q = filter.trim().toLowerCase();
  const names = k.strings.name || [];
  const out = rows.filter((a) => {
    if (backend && str(k, "backend", a.first) !== backend) return false;
    if (!q) return true;
    if ((model.header.names[a.name] || "").toLowerCase().includes(q)) return true;
    if ((names[a.name] || "").toLowerCase().includes(q)) return true;
    const op = str(k, "op", a.first);
    return !!op && op.toLowerCase().includes(q);
  });
  const sign = desc ? -1 : 1;
  out.sort((x, y) => {
    const a = sortValue(model, x, sort),
      b = sortValue(model, y, sort);
    return a < b ? -sign : a > b ? sign : y.total - x.total;
  });
  return out;
}

/** The table's rows top to bottom: { type: "group", g, label, share } headers (grouped: the
 * kernels, launches and time of each group, costliest first; `collapsed` group codes show no
 * rows), { type: "kernel", a } rows and, under those whose "group:name" is in `expanded`,
 * { type: "launch", i, a } rows. */
export function flatRows(model, rows, { groupBy, total, expanded, collapsed }) {
  const flat = [];
  const pushKernel = (a) => {
    flat.push({ type: "kernel", a });
    const key = `${a.group}:${a.name}`;
    if (expanded.has(key)) {
      for (const i of a.launchIdx) flat.push({ type: "launch", i, a });
    }
  };
  if (groupBy === "none") {
    rows.forEach(pushKernel);
    return flat;
  }
  const groups = new Map();
  for (const a of rows) {
    if (!groups.has(a.group)) groups.set(a.group, { code: a.group, rows: [], total: 0, launches: 0 });
    const g = groups.get(a.group);
    g.rows.push(a);
    g.total += a.total;
    g.launches += a.launches;
  }
  const gs = [...groups.values()].sort((x, y) => y.total - x.total);
  for (const g of gs) {
    flat.push({ type: "group", g, label: groupLabel(model, groupBy, g.code), share: total ? g.total / total : 0 });
    if (!collapsed.has(g.code)) g.rows.forEach(pushKernel);
  }
  return flat;
}

/** The CSV export of aggregate rows: [header, rows] with raw numbers and full names
 * (`groupBy` "backend" or "op" adds the group's column first). */
export function csvRows(model, rows, groupBy) {
  const k = model.tables.kernels;
  const grouped = groupBy !== "none";
  const head = [
    ...(grouped ? [groupBy === "op" ? "cpu_op" : "group_backend"] : []),
    "name",
    "short_name",
    "backend",
    "launches",
    "total_us",
    "mean_us",
    "median_us",
    "min_us",
    "max_us",
    "std_us",
    "share",
    "theoretical_occupancy_min",
    "theoretical_occupancy_max",
    "occupancy_limiter",
    "grid",
    "grid_blocks_min",
    "grid_blocks_max",
    "block",
    "registers_per_thread_min",
    "registers_per_thread_max",
    "shared_mem_bytes_min",
    "shared_mem_bytes_max",
    "waves_min",
    "waves_max",
  ];
  const lo = (r) => (r ? r[0] : null),
    top = (r) => (r ? r[1] : null);
  const body = rows.map((a) => [
    ...(grouped ? [groupLabel(model, groupBy, a.group)] : []),
    k.strings.name[a.name],
    model.header.names[a.name] || "",
    str(k, "backend", a.first) || "",
    a.launches,
    +a.total.toFixed(3),
    +a.mean.toFixed(3),
    +a.median.toFixed(3),
    +a.min.toFixed(3),
    +a.max.toFixed(3),
    +a.std.toFixed(3),
    +a.share.toFixed(6),
    lo(a.occ) === null ? null : +lo(a.occ).toFixed(4),
    top(a.occ) === null ? null : +top(a.occ).toFixed(4),
    a.occ && a.occ[0] === a.occ[1] ? str(k, "occupancy_limiter", a.first) : "",
    a.gridVaries ? "mixed" : dims(k, "grid", a.first).replace(/×/g, "x"),
    lo(a.blocks),
    top(a.blocks),
    a.blockVaries ? "mixed" : dims(k, "block", a.first).replace(/×/g, "x"),
    lo(a.regs),
    top(a.regs),
    lo(a.smem),
    top(a.smem),
    lo(a.waves) === null ? null : +lo(a.waves).toFixed(4),
    top(a.waves) === null ? null : +top(a.waves).toFixed(4),
  ]);
  return [head, body];
}
