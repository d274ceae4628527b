// Drawing the timeline (timeline.js) on its two canvases: the lanes (the time axis, slices
// coloured by backend, copy direction or host span kind with their names where they fit, idle
// gaps by cause) and, on the canvas above them, what follows the pointer (the hovered launch's
// link, the search matches, the selected range). Each function takes the Timeline, whose rows
// (lanes.js) say where everything goes; items are culled by binary search, so 100k launches
// redraw on every wheel/drag event. Colours: the payload's vocabulary (kernelscope/view/vocabulary.py).
import { fmtUs, backendColor, causeColor, vocab, safeColor } from "./format.js";
import { str } from "./data.js";
import { LABEL_W, AXIS_H, firstFrom, sliceName } from "./lanes.js";

// A slice this wide (CSS px) or more carries its name, truncated to fit.
const TEXT_MIN_W = 28;

/** Black or white, whichever reads better on a fill colour (#rgb / #rrggbb). */
const inkCache = new Map();
export function ink(color) {
  if (!inkCache.has(color)) {
    let c = String(color || "").replace("#", "");
    if (c.length === 3)
      c = c
        .split("")
        .map((x) => x + x)
        .join("");
    const v = parseInt(c.slice(0, 6), 16);
    const lum = Number.isNaN(v)
      ? 0.5
      : (0.2126 * ((v >> 16) & 255) + 0.7152 * ((v >> 8) & 255) + 0.0722 * (v & 255)) / 255;
    inkCache.set(color, lum > 0.55 ? "#111" : "#fff");
  }
  return inkCache.get(color);
}

// Colours of idle-gap causes (kernelscope.analysis.timeline.CAUSES), copies and host spans come
// from the payload's vocabulary (format.js: vocab).

/** Host spans by kind: "op", "annotation", "runtime" or "sync" (a host-blocking call; marked by Python). */
export function hostColor(kind) {
  const c = vocab("host");
  return safeColor(c[kind] || (kind === "annotation" ? c.op : null) || c.runtime);
}

/** A copy by direction (HtoD, DtoH, DtoD), else by kind (memset). */
export function copyColor(copyKind, kind) {
  const c = vocab("copies");
  return safeColor(c[copyKind] || c[kind]);
}

function niceStep(x) {
  const p = 10 ** Math.floor(Math.log10(x || 1));
  const m = x / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/** The time axis: a tick line and label per step; the last label ends at its tick instead of
 * running past the edge. */
function drawAxis(ctx, [a, b], width, height, { fg, grid }) {
  ctx.fillStyle = fg;
  ctx.strokeStyle = grid;
  ctx.lineWidth = 1;
  const sx = (width - LABEL_W) / (b - a);
  const step = niceStep((b - a) / 8);
  let lastEnd = -Infinity;
  for (let t = Math.ceil(a / step) * step; t <= b; t += step) {
    const x = LABEL_W + (t - a) * sx;
    ctx.beginPath();
    ctx.moveTo(x + 0.5, AXIS_H - 4);
    ctx.lineTo(x + 0.5, height);
    ctx.stroke();
    const label = fmtUs(t);
    const tw = ctx.measureText(label).width;
    let lx = x + 2;
    if (lx + tw > width - 1) lx = x - 2 - tw;
    if (lx > lastEnd + 4 && lx >= LABEL_W) {
      ctx.fillText(label, lx, 12);
      lastEnd = lx + tw;
    }
  }
}

/** A slice's fill: kernels by backend, host spans by kind, copies by direction. */
function sliceColor(p, it) {
  if (it.t === "kernels") return backendColor(p.bk[p.kt.cols.backend[it.i]]);
  if (it.t === "host") return hostColor(str(p.ht, "kind", it.i));
  return copyColor(str(p.ct, "copy_kind", it.i), str(p.ct, "kind", it.i));
}

/** One level of a lane: the items in view; many launches in one pixel column are drawn once.
 * Returns how many were drawn. */
function drawLevel(p, lv, y, lh) {
  const { ctx, a, b, sx, w, hl } = p;
  const items = lv.items;
  let lastX = -1,
    lastColor = "",
    drawn = 0;
  for (let j = firstFrom(lv, a); j < items.length && items[j].s <= b; j++) {
    const it = items[j];
    if (it.e < a) continue;
    const x0 = LABEL_W + Math.max(0, (it.s - a) * sx);
    const x1 = LABEL_W + Math.min(w, (it.e - a) * sx);
    const color = sliceColor(p, it);
    // A highlight fades the other GPU work; the host lanes stay as context.
    const faded = hl && it.t !== "host" && !(it.t === "kernels" && hl.has(p.kt.cols.name[it.i]));
    const key = faded ? `${color}~` : color;
    if (Math.floor(x1) <= lastX && key === lastColor) continue;
    ctx.globalAlpha = faded ? 0.22 : 1;
    ctx.fillStyle = color;
    const wpx = Math.max(hl && !faded ? 2 : 1, x1 - x0);
    ctx.fillRect(x0, y + 2, wpx, lh - 4);
    if (wpx >= TEXT_MIN_W && !faded) {
      const name = sliceName(p.model, it);
      const n = Math.floor((wpx - 6) / p.charW);
      if (n >= 3 && name) {
        ctx.fillStyle = ink(color);
        ctx.fillText(name.length > n ? `${name.slice(0, n - 1)}…` : name, x0 + 3, y + lh / 2 + 4, wpx - 5);
      }
    }
    ctx.globalAlpha = 1;
    lastX = Math.floor(Math.max(x1, x0 + 1));
    lastColor = key;
    drawn++;
  }
  return drawn;
}

/** An idle lane: each gap in view, coloured by its cause. */
function drawGaps(p, row) {
  const { ctx, a, b, sx, w } = p;
  const gt = p.model.tables.gaps;
  const y0 = row.y,
    lh = row.lh;
  for (const g of row.g.gaps) {
    if (g.e < a || g.s > b) continue;
    ctx.fillStyle = causeColor(str(gt, "cause", g.i));
    const x0 = LABEL_W + Math.max(0, (g.s - a) * sx),
      x1 = LABEL_W + Math.min(w, (g.e - a) * sx);
    ctx.fillRect(x0, y0 + 3, Math.max(1, x1 - x0), lh - 6);
  }
}

/** The lanes' canvas: axis, each row's label and slices, the highlighted kernels outlined.
 * Returns how many slices were drawn. */
export function paintLanes(tl, ctx, width, height, colors) {
  const [a, b] = tl.view;
  const w = width - LABEL_W;
  const { fg, grid } = colors;
  drawAxis(ctx, tl.view, width, height, colors);
  const m = tl.model;
  const p = {
    ctx,
    model: m,
    a,
    b,
    w,
    sx: w / (b - a),
    hl: tl.hl,
    kt: m.tables.kernels,
    ct: m.tables.copies,
    ht: m.tables.host,
    bk: m.tables.kernels.strings.backend || [],
    charW: ctx.measureText("abcdefghijklmnopqrstuvwxyz").width / 26,
  };
  let drawn = 0;
  for (const row of tl.rows) {
    const y0 = row.y,
      lh = row.lh;
    ctx.fillStyle = fg;
    ctx.fillText(row.text, 4, y0 + Math.min(lh, 18) / 2 + 4, LABEL_W - 8);
    if (row.kind === "gaps") {
      drawGaps(p, row);
      continue;
    }
    for (let d = 0; d < row.levels; d++) drawn += drawLevel(p, row.lane.levels[d], y0 + d * lh, lh);
    if (row.kind === "lane" && row.levels > 1) {
      ctx.fillStyle = grid;
      ctx.fillRect(LABEL_W, y0 + row.h - 0.5, w, 0.5);
    }
  }
  if (tl.hl) outlineHighlighted(tl, ctx, fg);
  ctx.fillStyle = grid;
  ctx.fillRect(LABEL_W - 1, AXIS_H, 1, height);
  return drawn;
}

function outlineHighlighted(tl, ctx, fg) {
  const kt = tl.model.tables.kernels;
  const [a, b] = tl.view;
  ctx.strokeStyle = fg;
  ctx.lineWidth = 1;
  let n = 0;
  for (let i = 0; i < kt.rows && n < 2000; i++) {
    if (!tl.hl.has(kt.cols.name[i])) continue;
    const s = kt.cols.start_us[i],
      e = s + kt.cols.duration_us[i];
    if (e < a || s > b) continue;
    const box = tl._box("kernels", i);
    if (!box) continue;
    ctx.strokeRect(
      Math.max(LABEL_W, box.x0) - 0.5,
      box.y + 1.5,
      Math.max(2, Math.min(tl.width, box.x1) - Math.max(LABEL_W, box.x0)) + 1,
      box.lh - 3
    );
    n++;
  }
}

/** The pointer's canvas: the search matches, the hovered launch's link and the selected range. */
export function paintOverlay(tl, ctx, width, height, { fg, selFill }) {
  drawMatches(tl, ctx, selFill);
  drawLink(tl, ctx, fg);
  const sel = tl.selection;
  if (!sel) return;
  const x0 = Math.max(LABEL_W, tl._t2x(sel.t0)),
    x1 = Math.min(width, tl._t2x(sel.t1));
  if (!(x1 > LABEL_W && x0 < width)) return;
  ctx.globalAlpha = 0.12;
  ctx.fillStyle = selFill;
  ctx.fillRect(x0, AXIS_H, Math.max(1, x1 - x0), height - AXIS_H);
  ctx.globalAlpha = 1;
  ctx.fillStyle = selFill;
  ctx.fillRect(x0, AXIS_H, 1, height - AXIS_H);
  ctx.fillRect(x1 - 1, AXIS_H, 1, height - AXIS_H);
  const label = fmtUs(sel.t1 - sel.t0);
  const tw = ctx.measureText(label).width;
  const lx = Math.max(LABEL_W + 2, Math.min(width - tw - 4, (x0 + x1) / 2 - tw / 2));
  ctx.fillStyle = selFill;
  ctx.fillRect(lx - 3, 1, tw + 6, 15);
  ctx.fillStyle = ink(selFill);
  ctx.fillText(label, lx, 12);
}

/** Outline every match in view (and the current one thicker). */
function drawMatches(tl, ctx, color) {
  if (!tl.matches.length) return;
  const [a, b] = tl.view;
  ctx.strokeStyle = color;
  let n = 0;
  const cur = tl.matches[tl.matchAt];
  for (const it of tl.matches) {
    if (n > 5000) break;
    const tab = tl.model.tables[it.t];
    const s = tab.cols.start_us[it.i];
    if (s > b) break;
    if (s + tab.cols.duration_us[it.i] < a) continue;
    const box = tl._box(it.t, it.i);
    if (!box) continue;
    ctx.lineWidth = it === cur ? 3 : 1.5;
    const x0 = Math.max(LABEL_W, box.x0),
      x1 = Math.min(tl.width, Math.max(box.x1, box.x0 + 2));
    ctx.strokeRect(x0 - 1, box.y + 1, x1 - x0 + 2, box.lh - 2);
    n++;
  }
  ctx.lineWidth = 1;
}

/** Hovering a kernel or a launch call: outline both and join them (the correlation id). */
function drawLink(tl, ctx, fg) {
  const it = tl.hover;
  if (!it || (it.t !== "kernels" && it.t !== "host")) return;
  const other = tl._linked(it);
  if (!other.length) return;
  const from = it.t === "host" ? tl._box("host", it.i) : tl._box("host", other[0]);
  const tos = it.t === "host" ? other.map((k) => tl._box("kernels", k)) : [tl._box("kernels", it.i)];
  if (!from) return;
  ctx.strokeStyle = fg;
  ctx.lineWidth = 1.5;
  ctx.strokeRect(from.x0, from.y + 1.5, from.x1 - from.x0, from.lh - 3);
  for (const to of tos) {
    if (!to) continue;
    ctx.strokeRect(to.x0, to.y + 1.5, to.x1 - to.x0, to.lh - 3);
    const ax = Math.max(LABEL_W, Math.min(tl.width, from.x0)),
      ay = from.y + from.lh - 1;
    const bx = Math.max(LABEL_W, Math.min(tl.width, to.x0)),
      by = to.y + 1;
    ctx.beginPath();
    ctx.moveTo(ax, ay);
    ctx.bezierCurveTo(ax, (ay + by) / 2, bx, (ay + by) / 2, bx, by);
    ctx.stroke();
    ctx.beginPath();
    ctx.moveTo(bx, by);
    ctx.lineTo(bx - 3.5, by - 6);
    ctx.lineTo(bx + 3.5, by - 6);
    ctx.closePath();
    ctx.fillStyle = fg;
    ctx.fill();
  }
  ctx.lineWidth = 1;
}
