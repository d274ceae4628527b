// The timeline: per host thread its CPU ops (nested, one level per call depth, record_function /
// NVTX-style annotations among them) and its CUDA API calls; per device/stream the kernels and
// copies; per device a lane that shows where that GPU was idle (gaps) and why. Canvas, drawn
// from the typed-array columns and culled by binary search, so 100k launches redraw on every
// wheel/drag event.
//
// Navigation as in Perfetto / Nsight Systems: the plain mouse wheel scrolls the page;
// ctrl/cmd+wheel (or a pinch) zooms at the pointer; shift+wheel or a sideways swipe pans;
// W/S zoom, A/D pan (the timeline has the keyboard once clicked); drag selects a time range
// (shift+drag or middle-drag pans); click a kernel to select it; Esc clears; F fits the range.
//
// API, for the report's other panels (the first screen's links to evidence, the kernel table):
//   timeline.showRange(t0, t1, { select = true })  zoom to [t0, t1] (us, the report's clock)
//       with a little margin, and, with select, make it the selected range (its summary shows)
//   timeline.highlight(names)   draw the launches of these kernels (full names) on top, the
//       others faded; [] or null clears
//   timeline.select(t0, t1)     select a range without moving the view; null clears
//   timeline.selection          { t0, t1, summary } of the selected range, or null
//   timeline.view               the [start, end] shown (us); timeline.draw() redraws
//   timeline.search(text)       find slices whose name matches the regex (case-insensitive; a
//       bad regex matches as plain text): timeline.matches [{ t, i }] by start, all outlined;
//       timeline.step(+1 | -1) shows the next / previous one and its properties
//   timeline.inspect({ t, i } | { gap }) the properties pane of a slice (what a click opens); null hides it
// Options: onPick(name, launch) a kernel clicked; onDraw(view, width) after every redraw (the
// utilization strip follows through it); onRange(launches, label) "show in the table" of a
// range; fill: an element whose height the lanes stretch to fill (a file tab); trace: the raw
// trace hand-off for "Perfetto" (perfetto.js).
//
// The lanes' layout, hit-testing and range sums are lanes.js (no DOM); the pixels are
// timeline_canvas.js; what a slice says is slices.js; the selection bar, the properties pane and
// the legend are timeline_panes.js. The payload's tables it reads (kernels,
// copies, host spans, idle gaps): kernelscope/view/report.py.
import { h, fmtUs, fmtInt } from "./format.js";
import { str } from "./data.js";
import { perfettoButton } from "./perfetto.js";
import {
  AXIS_H,
  LABEL_W,
  buildLanes,
  layoutRows,
  rowAt,
  hitAt,
  slotOf,
  correlations,
  linkedRows,
  sliceName,
  findSlices,
  summarize,
} from "./lanes.js";
import { sliceProperties, tooltipLines } from "./slices.js";
import { paintLanes, paintOverlay } from "./timeline_canvas.js";
import { selectionBar, propertiesPane, legend, plural } from "./timeline_panes.js";

// Exported: the utilization strip below the timeline shares this x mapping.
export { LABEL_W };

export class Timeline {
  constructor(model, { onPick, onDraw, onRange, fill, trace } = {}) {
    this.model = model;
    this.onPick = onPick || (() => {});
    this.onDraw = onDraw || null;
    this.onRange = onRange || null;
    this.fill = fill || null;
    this.data = buildLanes(model);
    const pad = (this.data.hi - this.data.lo) * 0.01 || 1;
    // The margin never reaches before the report's zero (a long run's 1% is tens of ms).
    this.full = [Math.max(this.data.lo - pad, Math.min(this.data.lo, 0)), this.data.hi + pad];
    this.view = [...this.full];
    this.scale = 1;
    this.collapsed = new Set();
    this.hl = null; // name codes of highlighted kernels
    this.hover = null; // the item under the pointer
    this.selection = null;
    this._rows();
    this.canvas = h("canvas", { class: "ks-timeline-canvas" });
    // What follows the pointer (the launch link, a range being dragged) draws on a canvas of its
    // own above the lanes, so hovering 100k launches never redraws them.
    this.over = h("canvas", { class: "ks-timeline-overlay" });
    this.tip = h("div", { class: "ks-tip", style: "display:none" });
    this.info = h("span", { class: "ks-timeline-info" });
    this.selBar = h("div", { class: "ks-timeline-selection", style: "display:none" });
    // A clicked slice's properties (Perfetto's / Nsight Systems' details panel).
    this.pane = h("div", { class: "ks-timeline-pane", style: "display:none" });
    this.matches = [];
    this.matchAt = -1;
    this.wrap = h(
      "div",
      {
        class: "ks-timeline-wrap",
        tabindex: "0",
        "data-lm-suppress-shortcuts": "true",
        "aria-label": "timeline: W/S zoom, A/D pan, drag to select a range",
      },
      this.canvas,
      this.over
    );
    this.el = h(
      "div",
      { class: "ks-timeline" },
      this._toolbar(trace),
      this.tip,
      this.wrap,
      // Below the lanes, so that a selection or a click never moves them.
      this.selBar,
      this.pane,
      legend(model)
    );
    this._bind();
  }

  /** The buttons above the lanes: zoom, reset, the range shown, Perfetto, find. */
  _toolbar(trace) {
    const btn = (label, title, fn, cls = "") =>
      h("button", { class: `ks-btn ${cls}`, text: label, title, onclick: fn });
    this.findInput = h("input", {
      class: "ks-filter ks-tl-find",
      type: "search",
      placeholder: "find slices (regex)…",
      "aria-label": "find slices by name (regex)",
      "data-lm-suppress-shortcuts": "true",
    });
    this.findInput.addEventListener("input", () => this.search(this.findInput.value));
    this.findInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        this.step(e.shiftKey ? -1 : 1);
      }
      e.stopPropagation();
    });
    this.findCount = h("span", { class: "ks-note ks-tl-find-count" });
    return h(
      "div",
      { class: "ks-toolbar" },
      btn("+", "zoom in", () => this.zoom(0.5)),
      btn("−", "zoom out", () => this.zoom(2)),
      btn("reset", "show everything", () => {
        this.view = [...this.full];
        this.draw();
      }),
      this.info,
      perfettoButton(this.model.header, trace),
      this.findInput,
      btn("‹", "previous match (shift+Enter)", () => this.step(-1), "ks-tl-prev"),
      btn("›", "next match (Enter)", () => this.step(1), "ks-tl-next"),
      this.findCount,
      h("span", {
        class: "ks-hint",
        text: "ctrl+wheel, W/S: zoom · shift+wheel, A/D: pan · drag: select range · click: kernel",
      })
    );
  }

  /** Rows top to bottom (lanes, then the idle lanes) with their y and height at this scale. */
  _rows() {
    const { rows, contentH } = layoutRows(this.data, this.collapsed, this.scale);
    this.rows = rows;
    this.contentH = contentH;
  }

  zoom(factor, center) {
    const [a, b] = this.view;
    const c = center ?? (a + b) / 2;
    const span = Math.max((b - a) * factor, 1e-3);
    const f = (c - a) / (b - a || 1);
    this.view = [c - span * f, c - span * f + span];
    this.draw();
  }

  pan(fraction) {
    const span = this.view[1] - this.view[0];
    this.view = [this.view[0] + span * fraction, this.view[1] + span * fraction];
    this.draw();
  }

  showRange(t0, t1, { select = true } = {}) {
    const a = Math.min(t0, t1),
      b = Math.max(t0, t1);
    const pad = (b - a) * 0.05 || 1;
    this.view = [a - pad, b + pad];
    if (select) this.select(a, b);
    else this.draw();
  }

  select(t0, t1) {
    if (t0 === null || t0 === undefined) {
      this.selection = null;
      this.selBar.style.display = "none";
    } else {
      const a = Math.min(t0, t1),
        b = Math.max(t0, t1);
      this.selection = { t0: a, t1: b, summary: this.summarize(a, b) };
      this._selBar();
    }
    this.draw();
  }

  highlight(names) {
    const codes = new Set();
    const strings = this.model.tables.kernels.strings.name || [];
    for (const n of names || []) {
      const c = strings.indexOf(n);
      if (c >= 0) codes.add(c);
    }
    this.hl = codes.size ? codes : null;
    this.draw();
  }

  /** Find slices (kernels by full or readable name, copies, host spans) whose name matches. */
  search(text) {
    const q = String(text || "").trim();
    this.query = q;
    this.matches = q ? findSlices(this.model, q) : [];
    this.matchAt = -1;
    this._findStatus();
    this._drawOverlay();
    return this.matches.length;
  }

  /** Show the next (+1) or previous (-1) match (centred when out of view), its properties open. */
  step(dir = 1) {
    const n = this.matches.length;
    if (!n) return null;
    this.matchAt = (((this.matchAt < 0 && dir < 0 ? 0 : this.matchAt + dir) % n) + n) % n;
    const it = this.matches[this.matchAt];
    const tab = this.model.tables[it.t];
    const s = tab.cols.start_us[it.i],
      e = s + tab.cols.duration_us[it.i];
    let span = this.view[1] - this.view[0];
    if (s < this.view[0] || e > this.view[1]) {
      if (span < (e - s) * 1.25) span = (e - s) * 1.25 || span;
      const c = (s + e) / 2;
      this.view = [c - span / 2, c + span / 2];
    }
    this.draw();
    this.inspect(it);
    this._findStatus();
    return it;
  }

  _findStatus() {
    const n = this.matches.length;
    this.findCount.textContent = !this.query
      ? ""
      : n
        ? `${this.matchAt >= 0 ? `${fmtInt(this.matchAt + 1)} of ` : ""}${plural(n, "match", "matches")}`
        : "no match";
  }

  /** The properties pane of a slice ({ t, i }) or an idle gap ({ gap }); null hides it. */
  inspect(it) {
    this.inspected = it || null;
    propertiesPane(this.pane, it ? sliceProperties(this.model, it, (x) => this._linked(x)) : null, () =>
      this.inspect(null)
    );
  }

  _x2t(x) {
    const w = this.width - LABEL_W;
    return this.view[0] + ((x - LABEL_W) / w) * (this.view[1] - this.view[0]);
  }
  _t2x(t) {
    return LABEL_W + ((t - this.view[0]) / (this.view[1] - this.view[0])) * (this.width - LABEL_W);
  }

  _bind() {
    const c = this.canvas;
    const pos = (e) => {
      const r = c.getBoundingClientRect();
      return [e.clientX - r.left, e.clientY - r.top];
    };
    c.addEventListener("wheel", (e) => this._wheel(e, pos(e)[0]), { passive: false });
    const drag = this._bindDrag(pos);
    c.addEventListener("mousemove", (e) => {
      if (!drag.active || !drag.active.moved) this._hover(...pos(e));
    });
    c.addEventListener("mouseleave", () => {
      this.tip.style.display = "none";
      if (this.hover) {
        this.hover = null;
        this._drawOverlay();
      }
      this._lastPos = null;
    });
    c.addEventListener("dblclick", () => {
      this.view = [...this.full];
      this.draw();
    });
    this.wrap.addEventListener("keydown", (e) => this._key(e));
    this._lastPos = null;
    // The canvas follows its container (a sidebar toggled, the window resized, a file tab's height).
    if (typeof ResizeObserver !== "undefined") {
      this.ro = new ResizeObserver(() => {
        if (!this.wrap.isConnected || !this.wrap.clientWidth) return;
        if (this.wrap.clientWidth !== this.width || (this.fill && this._fillScale() !== this.scale)) this.draw();
      });
      this.ro.observe(this.wrap);
      if (this.fill) this.ro.observe(this.fill);
    }
  }

  _wheel(e, x) {
    if (e.ctrlKey || e.metaKey) {
      // ctrl/cmd+wheel, and a trackpad pinch (which Chrome sends as ctrl+wheel): zoom.
      e.preventDefault();
      this.zoom(Math.exp(Math.max(-1, Math.min(1, e.deltaY * 0.0025))), this._x2t(Math.max(LABEL_W, x)));
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      // shift+wheel (some systems turn it into deltaX) or a sideways swipe: pan.
      e.preventDefault();
      const d = Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : e.deltaY;
      this.pan(d / Math.max(1, this.width - LABEL_W));
    }
    // The plain wheel scrolls the page (the notebook), as everywhere else.
  }

  /** A press on the lanes: a click, a drag that selects a range, or (shift / middle button) pans.
   * Returns the drag state ({ active }: the drag under way, or null). */
  _bindDrag(pos) {
    const c = this.canvas;
    const state = { active: null };
    // While a drag lasts the window reports the pointer (it may leave the canvas).
    const move = (e) => {
      const drag = state.active;
      if (!drag) return;
      const dx = e.clientX - drag.x0;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (!drag.moved) return;
      if (drag.mode === "pan") {
        const dt = (dx / (this.width - LABEL_W)) * (drag.view[1] - drag.view[0]);
        this.view = [drag.view[0] - dt, drag.view[1] - dt];
        this.draw();
      } else if (drag.mode === "select") {
        const [x] = pos(e);
        const t = this._x2t(Math.max(LABEL_W, Math.min(this.width, x)));
        this.selection = { t0: Math.min(drag.t0, t), t1: Math.max(drag.t0, t), summary: null, dragging: true };
        this._drawOverlay();
      }
    };
    const up = () => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      if (!state.active) return;
      const d = state.active;
      state.active = null;
      if (!d.moved) this._click(d.x, d.y);
      else if (d.mode === "select" && this.selection) this.select(this.selection.t0, this.selection.t1);
    };
    c.addEventListener("mousedown", (e) => {
      if (e.button !== 0 && e.button !== 1) return;
      e.preventDefault();
      this.wrap.focus({ preventScroll: true });
      const [x, y] = pos(e);
      const mode = x < LABEL_W ? "label" : e.shiftKey || e.button === 1 ? "pan" : "select";
      state.active = { x0: e.clientX, x, y, t0: this._x2t(x), view: [...this.view], mode, moved: false };
      window.addEventListener("mousemove", move);
      window.addEventListener("mouseup", up);
    });
    return state;
  }

  _key(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.toLowerCase();
    const at = this._lastPos ? this._x2t(Math.max(LABEL_W, this._lastPos[0])) : undefined;
    const fast = e.shiftKey ? 2.5 : 1;
    if (k === "w") this.zoom(1 / (1 + 0.25 * fast), at);
    else if (k === "s") this.zoom(1 + 0.25 * fast, at);
    else if (k === "a") this.pan(-0.1 * fast);
    else if (k === "d") this.pan(0.1 * fast);
    else if (k === "f" && this.selection) this.showRange(this.selection.t0, this.selection.t1, { select: false });
    else if (k === "escape") {
      this.select(null);
      this.highlight(null);
      this.inspect(null);
    } else return;
    // Handled here: not a notebook shortcut (A would insert a cell, D D delete one).
    e.preventDefault();
    e.stopPropagation();
  }

  /** What lies at canvas (x, y): { item, row }, { gap, row } or null; 2 px of slack either side. */
  _at(x, y) {
    if (x < LABEL_W) return null;
    const tol = ((this.view[1] - this.view[0]) / (this.width - LABEL_W)) * 2;
    return hitAt(this.rows, y, this._x2t(x), tol);
  }

  _name(it) {
    return sliceName(this.model, it);
  }

  _hover(x, y) {
    this._lastPos = [x, y];
    const hit = this._at(x, y);
    const item = hit && hit.item ? hit.item : null;
    if ((item && (!this.hover || this.hover.i !== item.i || this.hover.t !== item.t)) || (!item && this.hover)) {
      this.hover = item;
      this._drawOverlay();
    }
    if (!hit) {
      this.tip.style.display = "none";
      return;
    }
    this.tip.textContent = "";
    const lines = tooltipLines(this.model, hit, (it) => this._linked(it));
    lines.forEach((l, n) => {
      if (n) this.tip.append(document.createElement("br"));
      this.tip.append(document.createTextNode(l));
    });
    this.tip.style.display = "block";
    this._placeTip(x, y);
  }

  /** Put the tooltip beside the pointer, inside the timeline's box and the window: flipped
   * above the pointer on the lower lanes, left of it near the right edge. */
  _placeTip(x, y) {
    const el = this.el.getBoundingClientRect(),
      cv = this.canvas.getBoundingClientRect();
    const tw = this.tip.offsetWidth,
      th = this.tip.offsetHeight;
    const px = cv.left + x,
      py = cv.top + y; // the pointer, in window coordinates
    const right = Math.min(el.right, window.innerWidth),
      bottom = Math.min(el.bottom, window.innerHeight);
    const top = Math.max(el.top, 0),
      left = Math.max(el.left, 0);
    let cx = px + 14;
    if (cx + tw > right) cx = px - 14 - tw;
    cx = Math.max(left, Math.min(cx, right - tw));
    let cy = py + 16;
    if (cy + th > bottom) cy = py - 12 - th;
    cy = Math.max(top, Math.min(cy, bottom - th));
    this.tip.style.left = `${cx - el.left}px`;
    this.tip.style.top = `${cy - el.top}px`;
  }

  /** The other end of a launch: a kernel's launching call, or a call's kernels (by correlation id). */
  _linked(it) {
    if (this._corr === undefined) this._corr = correlations(this.model);
    return linkedRows(this.model, this._corr, it);
  }

  _click(x, y) {
    const hit = this._at(x, y);
    if (x < LABEL_W) {
      const r = rowAt(this.rows, y);
      if (r && r.row.kind === "lane" && r.row.lane.levels.length > 1) {
        const key = r.row.lane.key;
        if (this.collapsed.has(key)) this.collapsed.delete(key);
        else this.collapsed.add(key);
        this.draw();
      }
      return;
    }
    this.inspect(hit ? hit.item || { gap: hit.gap } : null);
    if (hit && hit.item && hit.item.t === "kernels") {
      const t = this.model.tables.kernels;
      this.onPick(str(t, "name", hit.item.i), hit.item.i);
    } else if (!hit && this.selection) {
      this.select(null);
    }
  }

  /** What ran in [t0, t1] (lanes.js: summarize). */
  summarize(t0, t1) {
    return summarize(this.model, this.data, t0, t1);
  }

  /** The selected range's bar under the lanes (timeline_panes.js). */
  _selBar() {
    const sel = this.selection;
    selectionBar(this.selBar, sel, {
      onRange: this.onRange,
      zoom: () => this.showRange(sel.t0, sel.t1, { select: false }),
      clear: () => this.select(null),
    });
  }

  /** The lane height factor that fills the `fill` element's height (a file tab), 1 without it. */
  _fillScale() {
    if (!this.fill) return 1;
    const f = this.fill.getBoundingClientRect(),
      w = this.wrap.getBoundingClientRect();
    const below = [...this.el.children]
      .filter((c) => c !== this.tip && c !== this.selBar && c !== this.pane && c.getBoundingClientRect().top > w.top)
      .reduce((a, c) => a + c.offsetHeight, 0);
    const avail = f.bottom - w.top - below - 16;
    const base = this.rows.reduce((a, r) => a + r.levels * (r.lh / this.scale), 0) || 1;
    const s = (avail - AXIS_H - 4) / base;
    return Math.max(1, Math.min(2.5, Math.floor(s * 8) / 8));
  }

  draw() {
    const c = this.canvas;
    const cw = this.wrap.clientWidth;
    if (!cw && this.width) return; // hidden (another tab): drawn when shown
    const width = Math.max(300, cw || 900);
    this.scale = this._fillScale();
    this._rows();
    const height = this.contentH + 4;
    const dpr = window.devicePixelRatio || 1;
    this.width = width;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
      c.width = Math.round(width * dpr);
      c.height = Math.round(height * dpr);
      c.style.width = `${width}px`;
      c.style.height = `${height}px`;
    }
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(this.el);
    const fg = css.getPropertyValue("--ks-fg").trim() || "#333";
    const grid = css.getPropertyValue("--ks-border").trim() || "#ddd";
    const selFill = css.getPropertyValue("--ks-accent").trim() || "#1976d2";
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px var(--jp-ui-font-family, sans-serif)";
    ctx.textBaseline = "alphabetic";
    this.drawn = paintLanes(this, ctx, width, height, { fg, grid });
    const [a, b] = this.view;
    this.info.textContent = ` ${fmtUs(a)} – ${fmtUs(b)} (${fmtUs(b - a)})`;
    this._colors = { fg, selFill };
    this._drawOverlay();
    if (this.onDraw) this.onDraw(this.view, width);
  }

  /** The pointer's layer: the hovered launch's link and the selected range. */
  _drawOverlay() {
    const c = this.over,
      base = this.canvas;
    if (!this.width || !this._colors) return;
    if (c.width !== base.width || c.height !== base.height) {
      c.width = base.width;
      c.height = base.height;
      c.style.width = base.style.width;
      c.style.height = base.style.height;
    }
    const dpr = window.devicePixelRatio || 1;
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const width = this.width,
      height = c.height / dpr;
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px var(--jp-ui-font-family, sans-serif)";
    paintOverlay(this, ctx, width, height, this._colors);
  }

  /** The x span and y of an item on the canvas (row and level), or null when off the lanes. */
  _box(t, i) {
    const slot = slotOf(this.model, this.data, this.rows, t, i);
    if (!slot) return null;
    return { x0: this._t2x(slot.s), x1: Math.max(this._t2x(slot.e), this._t2x(slot.s) + 1), y: slot.y, lh: slot.lh };
  }
}
