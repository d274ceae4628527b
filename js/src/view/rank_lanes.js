// The multi-rank view's lanes (ranks.js): per rank one row with a band per lane kind (compute,
// communication, copies), on the common clock of every rank, step starts ticked and the slowest
// rank of each step marked; canvas, zoom and pan. The lanes table and its kinds come from
// kernelscope/view/ranks.py (LANE_COLUMNS, LANE_KINDS).
import { h, fmtUs, safeColor } from "./format.js";
import { str } from "./data.js";

const ROW_H = 18;
const LABEL_W = 86;
const AXIS_H = 20;

/** Ranks as lanes: per rank one row with a band per lane kind, on the common clock. */
export class RankLanes {
  constructor(model, { onPick } = {}) {
    this.model = model;
    this.onPick = onPick || (() => {});
    const hd = model.header;
    this.kinds = hd.lane_kinds || [];
    this.ranks = (hd.ranks || []).map((r) => r.rank);
    const t = model.tables.lanes;
    this.byRank = new Map(this.ranks.map((r) => [r, new Map(this.kinds.map((k) => [k.kind, []]))]));
    for (let i = 0; t && i < t.rows; i++) {
      const lane = this.byRank.get(t.cols.rank[i]);
      const kind = str(t, "kind", i);
      if (lane && lane.has(kind)) lane.get(kind).push([t.cols.start_us[i], t.cols.end_us[i]]);
    }
    this.steps = new Map();
    for (const s of hd.steps || []) {
      if (!this.steps.has(s.rank)) this.steps.set(s.rank, []);
      this.steps.get(s.rank).push(s);
    }
    this.slowest = new Map((hd.stragglers || []).map((s) => [s.step, s.slowest_rank]));
    const span = hd.span || [0, 1];
    const pad = (span[1] - span[0]) * 0.01 || 1;
    this.full = [span[0] - pad, span[1] + pad];
    this.view = [...this.full];
    this.canvas = h("canvas", { class: "ks-timeline-canvas ks-rank-lanes" });
    this.tip = h("div", { class: "ks-tip", style: "display:none" });
    const btn = (text, title, onclick) => h("button", { class: "ks-btn", text, title, onclick });
    this.info = h("span", { class: "ks-timeline-info" });
    this.el = h(
      "div",
      { class: "ks-timeline ks-ranks-timeline" },
      h(
        "div",
        { class: "ks-toolbar" },
        btn("+", "zoom in", () => this.zoom(0.5)),
        btn("−", "zoom out", () => this.zoom(2)),
        btn("reset", "show everything", () => {
          this.view = [...this.full];
          this.draw();
        }),
        this.info,
        h("span", { class: "ks-hint", text: "wheel: zoom · drag: pan · click a rank: its kernels" })
      ),
      h("div", { class: "ks-timeline-wrap" }, this.canvas, this.tip),
      h(
        "div",
        { class: "ks-legend" },
        this.kinds.map((k) =>
          h(
            "span",
            { class: "ks-legend-item", title: k.title },
            h("span", { class: "ks-swatch", style: `background:${safeColor(k.color)}` }),
            k.label
          )
        ),
        " · step starts: ticks; the slowest rank of a step is marked ▲ (most work, least waiting)"
      )
    );
    this._bind();
  }

  zoom(f, at) {
    const [a, b] = this.view;
    const c = at ?? (a + b) / 2;
    const w = Math.max((b - a) * f, 0.001);
    const r = (c - a) / (b - a || 1);
    this.view = [c - w * r, c - w * r + w];
    this.draw();
  }

  _x2t(x) {
    return this.view[0] + ((x - LABEL_W) / (this.width - LABEL_W)) * (this.view[1] - this.view[0]);
  }

  _bind() {
    const c = this.canvas;
    c.addEventListener(
      "wheel",
      (e) => {
        e.preventDefault();
        const r = c.getBoundingClientRect();
        this.zoom(e.deltaY > 0 ? 1.25 : 0.8, this._x2t(e.clientX - r.left));
      },
      { passive: false }
    );
    let drag = null;
    c.addEventListener("mousedown", (e) => {
      drag = { x: e.clientX, y: e.clientY, view: [...this.view], moved: false };
    });
    window.addEventListener("mouseup", () => {
      if (drag && !drag.moved) this._click(drag);
      drag = null;
    });
    c.addEventListener("mousemove", (e) => {
      const r = c.getBoundingClientRect();
      if (drag) {
        const dx = e.clientX - drag.x;
        if (Math.abs(dx) > 2) drag.moved = true;
        const dt = (dx / (this.width - LABEL_W)) * (drag.view[1] - drag.view[0]);
        this.view = [drag.view[0] - dt, drag.view[1] - dt];
        this.draw();
        return;
      }
      this._hover(e.clientX - r.left, e.clientY - r.top);
    });
    c.addEventListener("mouseleave", () => {
      this.tip.style.display = "none";
    });
    c.addEventListener("dblclick", () => {
      this.view = [...this.full];
      this.draw();
    });
  }

  _rankAt(y) {
    const i = Math.floor((y - AXIS_H) / ROW_H);
    return i >= 0 && i < this.ranks.length ? this.ranks[i] : null;
  }

  _click(drag) {
    const r = this.canvas.getBoundingClientRect();
    const rank = this._rankAt(drag.y - r.top);
    if (rank !== null) this.onPick(rank);
  }

  _hover(x, y) {
    const rank = this._rankAt(y);
    if (rank === null || x < LABEL_W) {
      this.tip.style.display = "none";
      return;
    }
    const t = this._x2t(x);
    const row = (this.model.header.ranks || []).find((r) => r.rank === rank) || {};
    const step = (this.steps.get(rank) || []).find((s) => s.start_us <= t && t <= s.end_us);
    const lines = [
      `rank ${rank}${row.host ? ` on ${row.host}` : ""}${row.device ? ` (${row.device})` : ""}`,
      `at ${fmtUs(t)}`,
    ];
    if (step) {
      lines.push(
        `${step.step}: ${fmtUs(step.step_us)}; compute ${fmtUs(step.compute_us)}, communication ${fmtUs(step.comm_us)} `
          + `(exposed ${fmtUs(step.exposed_comm_us)})`
      );
      if (this.slowest.get(step.step) === rank) lines.push("the slowest rank of this step");
    }
    const lane = this.byRank.get(rank);
    for (const k of this.kinds) {
      const hit = (lane.get(k.kind) || []).find(([s, e]) => s <= t && t <= e);
      if (hit) lines.push(`${k.label}: ${fmtUs(hit[1] - hit[0])} from ${fmtUs(hit[0])}`);
    }
    this.tip.textContent = "";
    lines.forEach((l, i) => {
      if (i) this.tip.append(document.createElement("br"));
      this.tip.append(document.createTextNode(l));
    });
    this.tip.style.display = "block";
    this.tip.style.left = `${Math.min(x + 12, this.width - 280)}px`;
    this.tip.style.top = `${y + 12}px`;
  }

  draw() {
    const c = this.canvas;
    const W = Math.max(300, (c.parentElement && c.parentElement.clientWidth) || 900);
    const H = AXIS_H + this.ranks.length * ROW_H + 4;
    const dpr = window.devicePixelRatio || 1;
    this.width = W;
    if (c.width !== W * dpr || c.height !== H * dpr) {
      c.width = W * dpr;
      c.height = H * dpr;
      c.style.width = `${W}px`;
      c.style.height = `${H}px`;
    }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(this.el);
    const fg = css.getPropertyValue("--ks-fg").trim() || "#333";
    const border = css.getPropertyValue("--ks-border").trim() || "#ddd";
    g.clearRect(0, 0, W, H);
    g.font = "11px var(--jp-ui-font-family, sans-serif)";
    const [a, b] = this.view;
    const plot = W - LABEL_W;
    const k = plot / (b - a);
    const X = (t) => LABEL_W + (t - a) * k;
    g.fillStyle = fg;
    g.strokeStyle = border;
    const tick = niceStep((b - a) / 8);
    for (let t = Math.ceil(a / tick) * tick; t <= b; t += tick) {
      const x = X(t);
      g.beginPath();
      g.moveTo(x, AXIS_H - 4);
      g.lineTo(x, H);
      g.stroke();
      g.fillText(fmtUs(t), x + 2, 12);
    }
    const band = (ROW_H - 4) / Math.max(1, this.kinds.length);
    let drawn = 0;
    this.ranks.forEach((rank, i) => {
      const y = AXIS_H + i * ROW_H;
      const slowSteps = (this.steps.get(rank) || []).filter((s) => this.slowest.get(s.step) === rank).length;
      g.fillStyle = fg;
      g.fillText(`rank ${rank}${slowSteps ? " ▲" : ""}`, 4, y + 12);
      const lane = this.byRank.get(rank);
      this.kinds.forEach((kd, j) => {
        g.fillStyle = safeColor(kd.color);
        let last = -1;
        for (const [s, e] of lane.get(kd.kind) || []) {
          if (e < a || s > b) continue;
          const x0 = Math.max(LABEL_W, X(s));
          const x1 = Math.min(W, X(e));
          if (Math.floor(x1) <= last) continue; // sub-pixel: already covered
          g.fillRect(x0, y + 2 + j * band, Math.max(1, x1 - x0), Math.max(1, band - 1));
          last = Math.floor(Math.max(x1, x0 + 1));
          drawn++;
        }
      });
      g.fillStyle = fg;
      for (const s of this.steps.get(rank) || []) {
        if (s.start_us < a || s.start_us > b) continue;
        const x = X(s.start_us);
        g.fillRect(x, y, 1, ROW_H - 2);
        if (this.slowest.get(s.step) === rank) g.fillText("▲", x + 2, y + ROW_H - 4);
      }
    });
    g.fillStyle = border;
    g.fillRect(LABEL_W - 1, AXIS_H, 1, H);
    this.info.textContent = ` ${fmtUs(a)} – ${fmtUs(b)} (${fmtUs(b - a)})`;
    this.drawn = drawn;
  }
}

function niceStep(x) {
  const p = 10 ** Math.floor(Math.log10(x || 1));
  const m = x / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}
