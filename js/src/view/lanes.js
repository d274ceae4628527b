// The timeline's lane layout, with no DOM and no canvas: which lanes exist and in what order (per
// host thread its CPU ops, one level per call depth, and its CUDA API calls; per device/stream the
// kernels and copies; per device the idle gaps), the rows they take at a lane height, what lies
// under a point, the launch links (correlation ids) and what ran in a time range. Pure functions
// over the payload's columns (kernels, copies, host, gaps: kernelscope/view/report.py; the idle
// gaps and their causes: kernelscope/analysis/timeline.py); timeline.js draws them.
import { str, int } from "./data.js";

export const LANE_H = 18;
// One call-depth level of a thread's nested ops: thinner, so deep stacks leave room for the GPU.
export const OP_LEVEL_H = 14;
// The utilization strip below the timeline shares this x mapping.
export const LABEL_W = 112;
export const AXIS_H = 20;

function level() {
  return { items: [], maxEnd: null };
}

/** A table row as a lane item: { t (table), i (row), s (start), e (end) }. */
function item(tab, t, i) {
  return { t, i, s: tab.cols.start_us[i], e: tab.cols.start_us[i] + tab.cols.duration_us[i] };
}

/** Per host thread: a lane of its CPU ops (a level per call depth) and one of its CUDA API calls. */
function hostLanes(model) {
  const ht = model.tables.host;
  const lanes = new Map();
  if (!ht) return [];
  const depth = ht.cols.depth;
  for (let i = 0; i < ht.rows; i++) {
    const tid = str(ht, "tid", i) || "?";
    const kind = str(ht, "kind", i);
    const isOp = kind === "op" || kind === "annotation";
    const key = `thread ${tid} ${isOp ? "ops" : "CUDA API"}`;
    if (!lanes.has(key)) lanes.set(key, { key, device: "host", stream: isOp ? 0 : 1, tid, host: true, levels: [] });
    const lane = lanes.get(key);
    const d = isOp && depth ? Math.max(0, depth[i]) : 0;
    while (lane.levels.length <= d) lane.levels.push(level());
    lane.levels[d].items.push(item(ht, "host", i));
  }
  return [...lanes.values()].sort((a, b) => (a.tid < b.tid ? -1 : a.tid > b.tid ? 1 : a.stream - b.stream));
}

/** Per (device, stream): one lane of its kernels and copies. */
function deviceLanes(model) {
  const lanes = new Map();
  for (const tname of ["kernels", "copies"]) {
    const t = model.tables[tname];
    if (!t) continue;
    for (let i = 0; i < t.rows; i++) {
      const dev = str(t, "device", i) || "?";
      const stream = int(t, "stream", i);
      const key = `${dev} s${stream ?? "?"}`;
      if (!lanes.has(key)) lanes.set(key, { key, device: dev, stream: stream ?? -1, levels: [level()] });
      lanes.get(key).levels[0].items.push(item(t, tname, i));
    }
  }
  return [...lanes.values()].sort((a, b) => (a.device < b.device ? -1 : a.device > b.device ? 1 : a.stream - b.stream));
}

/** Sort each level's items by start, with the running max of their ends (for culling items that
 * start before the view but reach into it); where each row is drawn (`laneOf`); the time span. */
function indexLanes(model, lanes) {
  let lo = Infinity,
    hi = -Infinity;
  const rows = (t) => (model.tables[t] ? model.tables[t].rows : 0);
  // Where each kernel and each host span is drawn (lane index), for the launch -> kernel link.
  const laneOf = {
    kernels: new Int32Array(rows("kernels")).fill(-1),
    host: new Int32Array(rows("host")).fill(-1),
    copies: new Int32Array(rows("copies")).fill(-1),
  };
  lanes.forEach((lane, li) => {
    for (const lv of lane.levels) {
      lv.items.sort((a, b) => a.s - b.s);
      let m = -Infinity;
      lv.maxEnd = new Float64Array(lv.items.length);
      lv.items.forEach((it, j) => {
        m = Math.max(m, it.e);
        lv.maxEnd[j] = m;
        laneOf[it.t][it.i] = li;
      });
      if (lv.items.length) {
        lo = Math.min(lo, lv.items[0].s);
        hi = Math.max(hi, m);
      }
    }
  });
  if (!Number.isFinite(lo)) {
    lo = 0;
    hi = 1;
  }
  return { lo, hi, laneOf };
}

/** Per device, its idle gaps by start (the gaps and their causes come from the analysis). */
function gapLanes(model) {
  const gaps = [];
  const gt = model.tables.gaps;
  if (!gt || !gt.rows) return gaps;
  const byDev = new Map();
  for (let i = 0; i < gt.rows; i++) {
    const dev = str(gt, "device", i) || "?";
    if (!byDev.has(dev)) byDev.set(dev, []);
    byDev.get(dev).push({ s: gt.cols.start_us[i], e: gt.cols.start_us[i] + gt.cols.duration_us[i], i });
  }
  for (const [device, g] of byDev) gaps.push({ key: `${device} idle`, device, gaps: g.sort((a, b) => a.s - b.s) });
  return gaps;
}

/** Lanes: items of each (device, stream) and each host thread, sorted by start; idle gaps per device. */
export function buildLanes(model) {
  const lanes = [...hostLanes(model), ...deviceLanes(model)];
  const { lo, hi, laneOf } = indexLanes(model, lanes);
  return { lanes, gaps: gapLanes(model), lo, hi, laneOf };
}

/** Rows top to bottom (lanes, then the idle lanes) with their y and height at a lane height
 * factor `scale`; a lane whose key is in `collapsed` shows one level. */
export function layoutRows(data, collapsed, scale) {
  const lh = Math.round(LANE_H * scale);
  let y = AXIS_H;
  const rows = [];
  for (const lane of data.lanes) {
    const n = collapsed.has(lane.key) ? 1 : lane.levels.length;
    const label = lane.levels.length > 1 ? `${collapsed.has(lane.key) ? "▸" : "▾"} ${lane.key}` : lane.key;
    const llh = lane.levels.length > 1 ? Math.round(OP_LEVEL_H * scale) : lh;
    rows.push({ kind: "lane", lane, label: lane.key, text: label, levels: n, y, h: n * llh, lh: llh });
    y += n * llh;
  }
  for (const g of data.gaps) {
    rows.push({ kind: "gaps", g, label: g.key, text: g.key, levels: 1, y, h: lh, lh });
    y += lh;
  }
  return { rows, contentH: y };
}

export function lowerBound(items, x) {
  let a = 0,
    b = items.length;
  while (a < b) {
    const m = (a + b) >> 1;
    if (items[m].s < x) a = m + 1;
    else b = m;
  }
  return a;
}

/** The index of the first item of a lane level that may reach into time `t` (or later). */
export function firstFrom(lv, t) {
  let j = lowerBound(lv.items, t);
  while (j > 0 && lv.maxEnd[j - 1] >= t) j--;
  return j;
}

/** fn(item, time inside) for each item of a lane level that overlaps [t0, t1] (an instant
 * inside it counts; a span that only touches an end does not). */
export function overlapping(lv, t0, t1, fn) {
  for (let j = firstFrom(lv, t0); j < lv.items.length && lv.items[j].s <= t1; j++) {
    const it = lv.items[j];
    const d = Math.max(0, Math.min(it.e, t1) - Math.max(it.s, t0));
    if (it.e < t0 || (d <= 0 && it.e > it.s)) continue;
    fn(it, d);
  }
}

/** The row and level at canvas y, or null. */
export function rowAt(rows, y) {
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    if (y >= row.y && y < row.y + row.h) return { row, r, lv: Math.floor((y - row.y) / row.lh) };
  }
  return null;
}

/** What lies at canvas y and time t, `tol` us either side: { item, row }, { gap, row } or null. */
export function hitAt(rows, y, t, tol) {
  const hit = rowAt(rows, y);
  if (!hit) return null;
  const { row } = hit;
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
    if (it.e >= t - tol && (!best || (it.s <= t && t <= it.e))) {
      best = it;
      if (it.s <= t && t <= it.e) break;
    }
  }
  return best ? { item: best, row } : null;
}

/** Where a table row is drawn: its start and end (us), the y of its level and the level's height;
 * null when it is on no lane shown (a collapsed level). */
export function slotOf(model, data, rows, t, i) {
  const tab = model.tables[t];
  const li = data.laneOf[t] ? data.laneOf[t][i] : -1;
  if (li < 0) return null;
  const row = rows[li];
  if (!row || row.kind !== "lane") return null;
  const d = t === "host" && tab.cols.depth ? tab.cols.depth[i] : 0;
  if (d >= row.levels) return null;
  const s = tab.cols.start_us[i];
  return { s, e: s + tab.cols.duration_us[i], y: row.y + d * row.lh, lh: row.lh };
}

/** The launch links by correlation id: { host: id -> launching call's row, kern: id -> kernel rows },
 * or null when the tables hold no correlation ids. */
export function correlations(model) {
  const ht = model.tables.host,
    kt = model.tables.kernels;
  if (!ht || !ht.cols.correlation || !kt.cols.correlation) return null;
  const host = new Map(),
    kern = new Map();
  for (let i = 0; i < ht.rows; i++) {
    const c = ht.cols.correlation[i];
    const kind = str(ht, "kind", i);
    if (c > 0 && (kind === "runtime" || kind === "sync")) host.set(c, i);
  }
  for (let i = 0; i < kt.rows; i++) {
    const c = kt.cols.correlation[i];
    if (c > 0) {
      if (!kern.has(c)) kern.set(c, []);
      kern.get(c).push(i);
    }
  }
  return { host, kern };
}

/** The other end of a launch: a kernel's launching call, or a call's kernels (rows), by `corr`
 * (correlations(model)). */
export function linkedRows(model, corr, it) {
  if (!corr) return [];
  if (it.t === "kernels") {
    const r = corr.host.get(model.tables.kernels.cols.correlation[it.i]);
    return r === undefined ? [] : [r];
  }
  if (it.t === "host") return corr.kern.get(model.tables.host.cols.correlation[it.i]) || [];
  return [];
}

/** The CPU ops of thread `tid` open at time `at` (outermost first), as "a › b › c"; row `self` left out. */
export function callStack(model, tid, at, self) {
  const ht = model.tables.host;
  if (!ht) return null;
  const open = [];
  for (let j = 0; j < ht.rows; j++) {
    if (j === self) continue;
    const kind = str(ht, "kind", j);
    if (kind !== "op" && kind !== "annotation") continue;
    const s = ht.cols.start_us[j];
    if (s <= at && at <= s + ht.cols.duration_us[j] && str(ht, "tid", j) === tid)
      open.push([ht.cols.depth ? ht.cols.depth[j] : 0, s, j]);
  }
  open.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return open.length ? open.map((o) => str(ht, "name", o[2])).join(" › ") : null;
}

/** The name a slice is drawn and listed with: a kernel's readable name, else the recorded one. */
export function sliceName(model, it) {
  const t = model.tables[it.t];
  if (it.t === "kernels") return model.header.names[t.cols.name[it.i]] || str(t, "name", it.i) || "";
  return str(t, "name", it.i) || (it.t === "copies" ? "copy" : "");
}

/** Slices (kernels by full or readable name, copies, host spans) whose name matches `q`, a regex
 * (case-insensitive; a bad regex matches as plain text): [{ t, i, s }] by start. */
export function findSlices(model, q) {
  const matches = [];
  let re;
  try {
    re = new RegExp(q, "i");
  } catch {
    re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
  }
  for (const t of ["kernels", "copies", "host"]) {
    const tab = model.tables[t];
    if (!tab || !tab.cols.name) continue;
    // Each distinct name is tested once; kernels also by their readable name.
    const hit = (tab.strings.name || []).map(
      (n, c) => re.test(n) || (t === "kernels" && re.test(model.header.names[c] || ""))
    );
    const col = tab.cols.name;
    for (let i = 0; i < tab.rows; i++) if (col[i] >= 0 && hit[col[i]]) matches.push({ t, i, s: tab.cols.start_us[i] });
  }
  return matches.sort((a, b) => a.s - b.s);
}

/** The time the intervals [[s, e]] cover together (their union). */
function unionLength(iv) {
  iv.sort((a, b) => a[0] - b[0]);
  let total = 0,
    cs = -Infinity,
    ce = -Infinity;
  for (const [s, e] of iv) {
    if (s > ce) {
      if (ce > cs) total += ce - cs;
      cs = s;
      ce = e;
    } else if (e > ce) ce = e;
  }
  if (ce > cs) total += ce - cs;
  return total;
}

/** The sums over the lanes' items that overlap [t0, t1], each clipped to it. */
function rangeSums(model, data, t0, t1) {
  const kt = model.tables.kernels,
    ht = model.tables.host;
  const r = {
    launches: [],
    byName: new Map(),
    count: new Map(),
    ops: new Map(),
    busy: new Map(),
    kernelTime: 0,
    copies: 0,
    copyTime: 0,
  };
  for (const lane of data.lanes) {
    if (lane.host) {
      // CPU ops (every nesting level; a nested op counts its own time too, as in Perfetto).
      if (lane.stream !== 0) continue;
      for (const lv of lane.levels) {
        overlapping(lv, t0, t1, (it, d) => {
          const code = ht.cols.name[it.i];
          const o = r.ops.get(code) || r.ops.set(code, { count: 0, total: 0 }).get(code);
          o.count++;
          o.total += d;
        });
      }
      continue;
    }
    overlapping(lane.levels[0], t0, t1, (it, d) => {
      // device -> [[s, e]] clipped intervals
      if (!r.busy.has(lane.device)) r.busy.set(lane.device, []);
      r.busy.get(lane.device).push([Math.max(it.s, t0), Math.min(it.e, t1)]);
      if (it.t === "kernels") {
        r.launches.push(it.i);
        r.kernelTime += d;
        const code = kt.cols.name[it.i];
        r.byName.set(code, (r.byName.get(code) || 0) + d);
        r.count.set(code, (r.count.get(code) || 0) + 1);
      } else {
        r.copies++;
        r.copyTime += d;
      }
    });
  }
  return r;
}

/** What ran in [t0, t1]: kernel launches and time, copies, GPU busy and idle per device,
 * the costliest kernels: sums of CUPTI-measured intervals, clipped to the range; `rows`: per
 * kernel name and per CPU op name, { kind, name, short, count, total (us inside), share (of
 * the range's length) }, as Perfetto's slice summary. */
export function summarize(model, data, t0, t1) {
  const kt = model.tables.kernels,
    ht = model.tables.host;
  const clip = (s, e) => Math.max(0, Math.min(e, t1) - Math.max(s, t0));
  const { launches, byName, count, ops, busy, kernelTime, copies, copyTime } = rangeSums(model, data, t0, t1);
  const devices = [...busy.entries()].map(([device, iv]) => {
    const total = unionLength(iv);
    return { device, busy: total, share: t1 > t0 ? total / (t1 - t0) : 0 };
  });
  const gt = model.tables.gaps;
  let idle = 0;
  if (gt)
    for (let i = 0; i < gt.rows; i++) idle += clip(gt.cols.start_us[i], gt.cols.start_us[i] + gt.cols.duration_us[i]);
  const short = (code) => model.header.names[code] || kt.strings.name[code];
  const top = [...byName.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([code, us]) => ({ name: kt.strings.name[code], short: short(code), us }));
  const span = t1 - t0 || 1;
  const rows = [
    ...[...byName].map(([code, us]) => ({
      kind: "kernel",
      name: kt.strings.name[code],
      short: short(code),
      count: count.get(code),
      total: us,
      share: us / span,
    })),
    ...[...ops].map(([code, o]) => ({
      kind: "CPU op",
      name: ht.strings.name[code],
      short: ht.strings.name[code],
      count: o.count,
      total: o.total,
      share: o.total / span,
    })),
  ];
  return { duration: t1 - t0, launches, kernelTime, kernels: byName.size, copies, copyTime, devices, idle, top, rows };
}
