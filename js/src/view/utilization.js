// The utilization strip: hardware-counter samples (CUPTI PM sampling) drawn under the timeline,
// one row per track (SM active, tensor pipe, DRAM ...), on the timeline's own time axis. Canvas,
// redrawn whenever the timeline redraws (its onDraw hook). Labels, units, colours and the
// provenance note come from the payload header (kernelscope.panels.measured.counter_panel).
import { h, fmtUs, fmtInt, fmtNum, safeColor } from "./format.js";
import { str } from "./data.js";
import { LABEL_W } from "./lanes.js";

const ROW_H = 30;

function lowerBound(a, x) {
  let lo = 0,
    hi = a.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (a[m] < x) lo = m + 1;
    else hi = m;
  }
  return lo;
}

export class UtilizationStrip {
  constructor(model) {
    this.model = model;
    this.hd = model.header.counters;
    this.t = model.tables.counters;
    const tracks = (this.hd && this.hd.tracks) || [];
    // One device's samples per strip: the first device sampled (PM sampling runs on one device).
    const dev0 = this.t && this.t.rows ? str(this.t, "device", 0) : null;
    this.rows = [];
    if (this.t) for (let i = 0; i < this.t.rows; i++) if (str(this.t, "device", i) === dev0) this.rows.push(i);
    this.starts = Float64Array.from(this.rows, (i) => this.t.cols.start_us[i]);
    this.tracks = tracks
      .filter((tr) => this.t && this.t.cols[tr.column])
      .map((tr) => {
        let max = tr.max;
        if (!max) {
          max = 0;
          for (const i of this.rows) {
            const v = this.t.cols[tr.column][i];
            if (v > max) max = v;
          }
          max = max || 1;
        }
        return { ...tr, scaleMax: max };
      });
    this.device = dev0;
    this.canvas = h("canvas", { class: "ks-util-canvas" });
    this.tip = h("div", { class: "ks-tip", style: "display:none" });
    this.el = h(
      "div",
      { class: "ks-util", "data-samples": String(this.rows.length) },
      h("div", { class: "ks-util-wrap" }, this.canvas, this.tip),
      h("div", {
        class: "ks-legend ks-util-note",
        text: `${dev0 || ""} hardware counters: ${this.hd ? this.hd.note : ""}`,
      })
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

  _sampleAt(t) {
    const j = lowerBound(this.starts, t) - 1;
    if (j < 0) return -1;
    const i = this.rows[j];
    return t <= this.t.cols.start_us[i] + this.t.cols.duration_us[i] ? i : -1;
  }

  _hover(x, y) {
    const [a, b] = this.view;
    if (x < LABEL_W) {
      this.tip.style.display = "none";
      return;
    }
    const t = a + ((x - LABEL_W) / (this.width - LABEL_W)) * (b - a);
    const i = this._sampleAt(t);
    if (i < 0) {
      this.tip.style.display = "none";
      return;
    }
    this.tip.textContent = "";
    const c = this.t.cols;
    const lines = [
      `sample at ${fmtUs(c.start_us[i])} (${fmtUs(c.duration_us[i])})`,
      ...this.tracks.map((tr) => `${tr.label}: ${fmtVal(c[tr.column][i], tr.unit)}`),
      "measured by CUPTI PM sampling",
    ];
    lines.forEach((l, n) => {
      if (n) this.tip.append(document.createElement("br"));
      this.tip.append(document.createTextNode(l));
    });
    this.tip.style.display = "block";
    this.tip.style.left = `${Math.min(x + 12, this.width - 220)}px`;
    this.tip.style.top = `${y + 12}px`;
  }

  draw() {
    const c = this.canvas;
    const width = this.width;
    const height = this.tracks.length * ROW_H + 2;
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
    const grid = css.getPropertyValue("--ks-border").trim() || "#ddd";
    // The scale labels in the theme's secondary text colour (the border colour was near invisible).
    const fg2 = css.getPropertyValue("--ks-fg2").trim() || "#57606a";
    ctx.font = "11px var(--jp-ui-font-family, sans-serif)";
    const [a, b] = this.view;
    const w = width - LABEL_W;
    const sx = w / (b - a || 1);
    const j0 = Math.max(0, lowerBound(this.starts, a) - 1);
    const cols = this.t ? this.t.cols : {};
    let drawn = 0;
    this.tracks.forEach((tr, r) => {
      const y0 = r * ROW_H + 1,
        hgt = ROW_H - 6;
      ctx.fillStyle = fg;
      ctx.fillText(tr.label, 4, y0 + 12);
      ctx.fillStyle = fg2;
      ctx.fillText(tr.unit === "%" ? "0-100%" : `0-${fmtInt(tr.scaleMax)} ${tr.unit}`, 4, y0 + 24);
      ctx.fillStyle = grid;
      ctx.fillRect(LABEL_W, y0 + hgt, w, 1);
      ctx.fillStyle = safeColor(tr.color);
      const vals = cols[tr.column];
      // Several samples in one pixel column: draw their maximum once.
      let px = -1,
        best = 0;
      const flush = () => {
        if (px < 0) return;
        const hh = Math.max(0, Math.min(1, best / tr.scaleMax)) * hgt;
        if (hh > 0) ctx.fillRect(px, y0 + hgt - hh, 1, hh);
        drawn++;
      };
      for (let j = j0; j < this.rows.length; j++) {
        const i = this.rows[j];
        const s = cols.start_us[i],
          e = s + cols.duration_us[i];
        if (s > b) break;
        if (e < a) continue;
        const v = vals[i];
        if (Number.isNaN(v)) continue;
        const x0 = LABEL_W + Math.max(0, (s - a) * sx),
          x1 = LABEL_W + Math.min(w, (e - a) * sx);
        if (x1 - x0 >= 2) {
          flush();
          px = -1;
          best = 0;
          const hh = Math.max(0, Math.min(1, v / tr.scaleMax)) * hgt;
          ctx.fillRect(x0, y0 + hgt - hh, x1 - x0, hh);
          drawn++;
        } else {
          const p = Math.floor(x0);
          if (p !== px) {
            flush();
            px = p;
            best = v;
          } else if (v > best) best = v;
        }
      }
      flush();
    });
    ctx.fillStyle = grid;
    ctx.fillRect(LABEL_W - 1, 0, 1, height);
    this.drawn = drawn;
  }
}

function fmtVal(v, unit) {
  if (v === null || v === undefined || Number.isNaN(v)) return "-";
  if (unit === "%") return `${fmtNum(v, 1)}%`;
  if (unit === "GB/s") return `${fmtNum(v, 0)} GB/s`;
  return `${fmtNum(v, 2)} ${unit}`;
}
