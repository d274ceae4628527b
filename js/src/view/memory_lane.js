// The memory lane: GPU memory the caching allocator held over time, allocated (in tensors) and
// reserved (from the driver), drawn under the timeline on its own time axis, the allocated peak
// marked. Canvas, redrawn whenever the timeline redraws (its onDraw hook). The curve (bounded,
// the peak kept), its labels and colours come from the payload header's `memory`
// (kernelscope.panels.memory.memory_panel, sent by kernelscope.view.report); nothing is summed here.
import { h, fmtUs, fmtBytes, safeColor } from "./format.js";
import { LABEL_W } from "./lanes.js";

const LANE_H = 44;

/** The last point at or before `t` (-1 before the first). */
function pointAt(times, t) {
  let lo = 0,
    hi = times.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (times[m] <= t) lo = m + 1;
    else hi = m;
  }
  return lo - 1;
}

export class MemoryLane {
  constructor(model) {
    this.hd = model.header.memory;
    const s = this.hd.series;
    this.t = Float64Array.from(s.time_us);
    this.alloc = Float64Array.from(s.allocated);
    this.reserved = Float64Array.from(s.reserved);
    this.lane = this.hd.lane;
    this.max = this.lane.max_bytes || 1;
    this.canvas = h("canvas", { class: "ks-mem-canvas" });
    this.tip = h("div", { class: "ks-tip", style: "display:none" });
    this.el = h(
      "div",
      { class: "ks-mem", "data-points": String(this.t.length), title: this.lane.tooltip },
      h("div", { class: "ks-util-wrap" }, this.canvas, this.tip),
      h("div", { class: "ks-legend ks-mem-note", text: `${this.lane.label}: ${this.hd.headline}` })
    );
    this.canvas.addEventListener("mousemove", (e) => {
      const r = this.canvas.getBoundingClientRect();
      this._hover(e.clientX - r.left, e.clientY - r.top);
    });
    this.canvas.addEventListener("mouseleave", () => {
      this.tip.style.display = "none";
    });
    this.view = [0, 1];
    this.width = 900;
  }

  /** The timeline calls this after each redraw with its time window and width. */
  sync(view, width) {
    this.view = view;
    this.width = width;
    this.draw();
  }

  _hover(x, y) {
    const [a, b] = this.view;
    const i = x < LABEL_W ? -1 : pointAt(this.t, a + ((x - LABEL_W) / (this.width - LABEL_W)) * (b - a));
    if (i < 0) {
      this.tip.style.display = "none";
      return;
    }
    this.tip.textContent = "";
    const lines = [
      `at ${fmtUs(this.t[i])}`,
      `${this.lane.allocated}: ${fmtBytes(this.alloc[i])}`,
      `${this.lane.reserved}: ${fmtBytes(this.reserved[i])}`,
    ];
    lines.forEach((l, n) => {
      if (n) this.tip.append(document.createElement("br"));
      this.tip.append(document.createTextNode(l));
    });
    this.tip.style.display = "block";
    this.tip.style.left = `${Math.min(x + 12, this.width - 220)}px`;
    this.tip.style.top = `${y + 12}px`;
  }

  /** One series as a filled step curve over the view; returns the points drawn. */
  _area(ctx, vals, color, y0, hgt, a, b, sx) {
    const w = this.width - LABEL_W;
    const yOf = (v) => y0 + hgt - Math.max(0, Math.min(1, v / this.max)) * hgt;
    let i = Math.max(0, pointAt(this.t, a));
    ctx.fillStyle = safeColor(color);
    ctx.beginPath();
    ctx.moveTo(LABEL_W, y0 + hgt);
    let drawn = 0,
      last = LABEL_W;
    for (; i < this.t.length; i++) {
      const x0 = LABEL_W + Math.max(0, (this.t[i] - a) * sx);
      const next = i + 1 < this.t.length ? this.t[i + 1] : b;
      const x1 = LABEL_W + Math.min(w, (Math.min(next, b) - a) * sx);
      ctx.lineTo(x0, yOf(vals[i]));
      ctx.lineTo(x1, yOf(vals[i]));
      last = x1;
      drawn++;
      if (next > b) break;
    }
    ctx.lineTo(last, y0 + hgt);
    ctx.closePath();
    if (drawn) ctx.fill();
    return drawn;
  }

  draw() {
    const c = this.canvas;
    const width = this.width;
    const height = LANE_H + 2;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== width * dpr || c.height !== height * dpr) {
      c.width = width * dpr;
      c.height = height * dpr;
      c.style.width = `${width}px`;
      c.style.height = `${height}px`;
    }
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const css = getComputedStyle(this.el);
    const fg = css.getPropertyValue("--ks-fg").trim() || "#333";
    const fg2 = css.getPropertyValue("--ks-fg2").trim() || "#57606a";
    const grid = css.getPropertyValue("--ks-border").trim() || "#ddd";
    ctx.font = "11px var(--jp-ui-font-family, sans-serif)";
    const [a, b] = this.view;
    const sx = (width - LABEL_W) / (b - a || 1);
    const y0 = 4,
      hgt = LANE_H - 6;
    ctx.fillStyle = fg;
    ctx.fillText(this.lane.label, 4, y0 + 12);
    ctx.fillStyle = fg2;
    ctx.fillText(`0-${this.lane.max_text}`, 4, y0 + 26);
    this.drawn =
      this._area(ctx, this.reserved, this.lane.reserved_color, y0, hgt, a, b, sx)
      + this._area(ctx, this.alloc, this.lane.allocated_color, y0, hgt, a, b, sx);
    // The allocated peak, marked where it lies in the view.
    const p = this.hd.peak_us;
    if (p >= a && p <= b) {
      const x = LABEL_W + (p - a) * sx;
      ctx.fillStyle = fg;
      ctx.fillRect(x - 0.5, y0, 1, hgt);
      ctx.fillText(this.lane.peak, Math.min(x + 3, width - 90), y0 + 10);
    }
    ctx.fillStyle = grid;
    ctx.fillRect(LABEL_W, y0 + hgt, width - LABEL_W, 1);
    ctx.fillRect(LABEL_W - 1, 0, 1, height);
  }
}
