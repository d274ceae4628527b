// The timeline: one lane per device/stream holding kernels and copies, plus a lane per device
// that shows where that GPU was idle (gaps). Canvas, drawn from the typed-array columns and
// culled by binary search, so 100k launches redraw on every wheel/drag event.
import { h, fmtUs, fmtBytes, backendColor, causeColor, vocab, NEUTRAL } from "./format.js";
import { str, int } from "./data.js";

const LANE_H = 18;
// Exported: the utilization strip below the timeline shares this x mapping.
export const LABEL_W = 112;
const AXIS_H = 20;
// Colours of idle-gap causes (kernelscope.analysis.timeline.CAUSES), copies and host spans come
// from the payload's vocabulary (format.js: vocab).

/** Lanes: items of each (device, stream), sorted by start; idle gaps per device. */
export function buildLanes(model) {
  const lanes = new Map();
  // Host lanes first: outermost CPU ops and CUDA API calls per thread.
  const ht = model.tables.host;
  const hostLanes = new Map();
  if (ht) {
    for (let i = 0; i < ht.rows; i++) {
      const tid = str(ht, "tid", i) || "?";
      const kind = str(ht, "kind", i);
      const key = `thread ${tid} ${kind === "op" ? "ops" : "CUDA API"}`;
      if (!hostLanes.has(key)) hostLanes.set(key, { key, device: "host", stream: kind === "op" ? 0 : 1, tid, items: [] });
      hostLanes.get(key).items.push({ t: "host", i, s: ht.cols.start_us[i], e: ht.cols.start_us[i] + ht.cols.duration_us[i] });
    }
  }
  const add = (tname) => {
    const t = model.tables[tname];
    if (!t) return;
    for (let i = 0; i < t.rows; i++) {
      const dev = str(t, "device", i) || "?";
      const stream = int(t, "stream", i);
      const key = `${dev} s${stream ?? "?"}`;
      if (!lanes.has(key)) lanes.set(key, { key, device: dev, stream: stream ?? -1, items: [] });
      lanes.get(key).items.push({ t: tname, i, s: t.cols.start_us[i], e: t.cols.start_us[i] + t.cols.duration_us[i] });
    }
  };
  add("kernels");
  add("copies");
  const byKey = (a, b) => (a.device < b.device ? -1 : a.device > b.device ? 1 : a.stream - b.stream);
  const host = [...hostLanes.values()].sort((a, b) => (a.tid < b.tid ? -1 : a.tid > b.tid ? 1 : a.stream - b.stream));
  const out = [...host, ...[...lanes.values()].sort(byKey)];
  let lo = Infinity, hi = -Infinity;
  for (const lane of out) {
    lane.items.sort((a, b) => a.s - b.s);
    // Running max of item ends, for culling items that start before the view but reach into it.
    let m = -Infinity;
    lane.maxEnd = new Float64Array(lane.items.length);
    lane.items.forEach((it, j) => { m = Math.max(m, it.e); lane.maxEnd[j] = m; });
    if (lane.items.length) { lo = Math.min(lo, lane.items[0].s); hi = Math.max(hi, m); }
  }
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
  return { lanes: out, gaps, lo, hi };
}

function lowerBound(items, x) {
  let a = 0, b = items.length;
  while (a < b) { const m = (a + b) >> 1; if (items[m].s < x) a = m + 1; else b = m; }
  return a;
}

export class Timeline {
  constructor(model, { onPick, onDraw } = {}) {
    this.model = model;
    this.onPick = onPick || (() => {});
    this.onDraw = onDraw || null;
    this.data = buildLanes(model);
    const pad = (this.data.hi - this.data.lo) * 0.01 || 1;
    this.full = [this.data.lo - pad, this.data.hi + pad];
    this.view = [...this.full];
    this.rows = [];
    for (const lane of this.data.lanes) this.rows.push({ kind: "lane", lane, label: lane.key });
    for (const g of this.data.gaps) this.rows.push({ kind: "gaps", g, label: g.key });
    this.canvas = h("canvas", { class: "ks-timeline-canvas" });
    this.tip = h("div", { class: "ks-tip", style: "display:none" });
    const btn = (label, title, fn) => h("button", { class: "ks-btn", text: label, title, onclick: fn });
    this.info = h("span", { class: "ks-timeline-info" });
    this.el = h("div", { class: "ks-timeline" },
      h("div", { class: "ks-toolbar" },
        btn("+", "zoom in", () => this.zoom(0.5)), btn("−", "zoom out", () => this.zoom(2)),
        btn("reset", "show everything", () => { this.view = [...this.full]; this.draw(); }), this.info,
        h("span", { class: "ks-hint", text: "wheel: zoom · drag: pan · click: select kernel" })),
      h("div", { class: "ks-timeline-wrap" }, this.canvas, this.tip),
      legend());
    this._bind();
  }

  zoom(factor, center) {
    const [a, b] = this.view;
    const c = center ?? (a + b) / 2;
    const span = Math.max((b - a) * factor, 1e-3);
    const f = (c - a) / (b - a || 1);
    this.view = [c - span * f, c - span * f + span];
    this.draw();
  }

  _x2t(x) { const w = this.width - LABEL_W; return this.view[0] + ((x - LABEL_W) / w) * (this.view[1] - this.view[0]); }

  _bind() {
    const c = this.canvas;
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      const rect = c.getBoundingClientRect();
      this.zoom(e.deltaY > 0 ? 1.25 : 0.8, this._x2t(e.clientX - rect.left));
    }, { passive: false });
    let drag = null;
    c.addEventListener("mousedown", (e) => { drag = { x: e.clientX, view: [...this.view], moved: false }; });
    window.addEventListener("mouseup", () => { if (drag && !drag.moved) this._click(drag); drag = null; });
    c.addEventListener("mousemove", (e) => {
      const rect = c.getBoundingClientRect();
      if (drag) {
        const dx = e.clientX - drag.x;
        if (Math.abs(dx) > 2) drag.moved = true;
        const dt = (dx / (this.width - LABEL_W)) * (drag.view[1] - drag.view[0]);
        this.view = [drag.view[0] - dt, drag.view[1] - dt];
        this.draw();
        return;
      }
      this._hover(e.clientX - rect.left, e.clientY - rect.top);
    });
    c.addEventListener("mouseleave", () => { this.tip.style.display = "none"; });
    c.addEventListener("dblclick", () => { this.view = [...this.full]; this.draw(); });
    this._lastPos = null;
  }

  _at(x, y) {
    const r = Math.floor((y - AXIS_H) / LANE_H);
    const row = this.rows[r];
    if (!row || x < LABEL_W) return null;
    const t = this._x2t(x);
    const tol = ((this.view[1] - this.view[0]) / (this.width - LABEL_W)) * 2;
    if (row.kind === "gaps") {
      const g = row.g.gaps.find((q) => q.s - tol <= t && t <= q.e + tol);
      return g ? { gap: g, row } : null;
    }
    const items = row.lane.items;
    let j = lowerBound(items, t + tol) - 1;
    for (; j >= 0 && row.lane.maxEnd[j] >= t - tol; j--) {
      if (items[j].e >= t - tol) return { item: items[j], row };
    }
    return null;
  }

  _hover(x, y) {
    this._lastPos = [x, y];
    const hit = this._at(x, y);
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
        lines.push(str(t, "name", it.i) || "?", `${fmtUs(t.cols.duration_us[it.i])} at ${fmtUs(t.cols.start_us[it.i])}`);
      } else if (it.t === "kernels") {
        lines.push(this.model.header.names[t.cols.name[it.i]] || str(t, "name", it.i),
          `${str(t, "backend", it.i) || "-"} · ${fmtUs(t.cols.duration_us[it.i])} at ${fmtUs(t.cols.start_us[it.i])}`,
          `op: ${str(t, "op", it.i) || "-"}`);
      } else {
        lines.push(str(t, "name", it.i) || "copy",
          `${fmtBytes(t.cols.bytes[it.i])} · ${fmtUs(t.cols.duration_us[it.i])} · ${t.cols.bandwidth_gbps[it.i].toFixed(1)} GB/s`);
      }
      if (t.cols.sm_active_pct && !Number.isNaN(t.cols.sm_active_pct[it.i])) {
        const p = (c) => (t.cols[c] && !Number.isNaN(t.cols[c][it.i]) ? `${t.cols[c][it.i].toFixed(0)}%` : "-");
        lines.push(`PM sampling: SMs ${p("sm_active_pct")} · tensor ${p("tensor_pct")} · DRAM ${p("dram_pct")}`);
      }
    }
    lines.forEach((l, n) => { if (n) this.tip.append(document.createElement("br")); this.tip.append(document.createTextNode(l)); });
    this.tip.style.display = "block";
    this.tip.style.left = `${Math.min(x + 12, this.width - 260)}px`;
    this.tip.style.top = `${y + 12}px`;
  }

  _click(drag) {
    const rect = this.canvas.getBoundingClientRect();
    const hit = this._at(drag.x - rect.left, (this._lastPos || [0, 0])[1]);
    if (hit && hit.item && hit.item.t === "kernels") {
      const t = this.model.tables.kernels;
      this.onPick(str(t, "name", hit.item.i));
    }
  }

  draw() {
    const c = this.canvas;
    const width = Math.max(300, c.parentElement ? c.parentElement.clientWidth || 900 : 900);
    const height = AXIS_H + this.rows.length * LANE_H + 4;
    const dpr = window.devicePixelRatio || 1;
    this.width = width;
    if (c.width !== width * dpr || c.height !== height * dpr) {
      c.width = width * dpr; c.height = height * dpr;
      c.style.width = `${width}px`; c.style.height = `${height}px`;
    }
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(this.el);
    const fg = css.getPropertyValue("--ks-fg").trim() || "#333";
    const grid = css.getPropertyValue("--ks-border").trim() || "#ddd";
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px var(--jp-ui-font-family, sans-serif)";
    const [a, b] = this.view;
    const w = width - LABEL_W;
    const sx = w / (b - a);
    // axis
    ctx.fillStyle = fg; ctx.strokeStyle = grid;
    const step = niceStep((b - a) / 8);
    for (let t = Math.ceil(a / step) * step; t <= b; t += step) {
      const x = LABEL_W + (t - a) * sx;
      ctx.beginPath(); ctx.moveTo(x, AXIS_H - 4); ctx.lineTo(x, height); ctx.stroke();
      ctx.fillText(fmtUs(t), x + 2, 12);
    }
    const kt = this.model.tables.kernels;
    const kb = kt.cols.backend;
    const bkStrings = kt.strings.backend || [];
    const ct = this.model.tables.copies;
    const ht = this.model.tables.host;
    let drawn = 0;
    this.rows.forEach((row, r) => {
      const y = AXIS_H + r * LANE_H;
      ctx.fillStyle = fg;
      ctx.fillText(row.label, 4, y + 12);
      if (row.kind === "gaps") {
        const gt = this.model.tables.gaps;
        for (const g of row.g.gaps) {
          ctx.fillStyle = causeColor(str(gt, "cause", g.i));
          if (g.e < a || g.s > b) continue;
          const x0 = LABEL_W + Math.max(0, (g.s - a) * sx), x1 = LABEL_W + Math.min(w, (g.e - a) * sx);
          ctx.fillRect(x0, y + 3, Math.max(1, x1 - x0), LANE_H - 6);
        }
        return;
      }
      const items = row.lane.items;
      let j = lowerBound(items, a);
      while (j > 0 && row.lane.maxEnd[j - 1] >= a) j--;
      let lastX = -1, lastColor = "";
      for (; j < items.length && items[j].s <= b; j++) {
        const it = items[j];
        if (it.e < a) continue;
        const x0 = LABEL_W + Math.max(0, (it.s - a) * sx);
        const x1 = LABEL_W + Math.min(w, (it.e - a) * sx);
        const color = it.t === "kernels" ? backendColor(bkStrings[kb[it.i]])
          : it.t === "host" ? hostColor(str(ht, "kind", it.i))
          : copyColor(str(ct, "copy_kind", it.i), str(ct, "kind", it.i));
        // Many launches in one pixel column: draw it once.
        if (Math.floor(x1) <= lastX && color === lastColor) continue;
        ctx.fillStyle = color;
        ctx.fillRect(x0, y + 2, Math.max(1, x1 - x0), LANE_H - 4);
        lastX = Math.floor(Math.max(x1, x0 + 1)); lastColor = color;
        drawn++;
      }
    });
    ctx.fillStyle = grid;
    ctx.fillRect(LABEL_W - 1, AXIS_H, 1, height);
    this.info.textContent = ` ${fmtUs(a)} – ${fmtUs(b)} (${fmtUs(b - a)})`;
    this.drawn = drawn;
    if (this.onDraw) this.onDraw(this.view, width);
  }
}

function legend() {
  const item = (color, label) => h("span", { class: "ks-legend-item" },
    h("span", { class: "ks-swatch", style: `background:${color}` }), label);
  const causes = Object.entries(vocab("causes")).filter(([, c]) => c.legend);
  return h("div", { class: "ks-legend" },
    "kernels: backend colours · copies: ", Object.keys(vocab("copies")).map((k) => item(copyColor(k, k), k)),
    " · host: ", item(hostColor("op"), "CPU op"), item(hostColor("runtime"), "CUDA API"),
    item(hostColor("sync"), "synchronize"),
    " · GPU idle, waiting on: ", causes.map(([, c]) => item(c.color, c.legend)));
}

/** Host spans by kind: "op", "runtime" or "sync" (a host-blocking call; marked by Python). */
function hostColor(kind) {
  const c = vocab("host");
  return c[kind] || c.runtime || NEUTRAL;
}

/** A copy by direction (HtoD, DtoH, DtoD), else by kind (memset). */
function copyColor(copyKind, kind) {
  const c = vocab("copies");
  return c[copyKind] || c[kind] || NEUTRAL;
}

function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(x || 1)));
  const m = x / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}
