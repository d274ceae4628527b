// The window chooser of a report too big for one view (kernelscope.view.report, header.window):
// what part of the trace the view holds, on an overview strip of the whole trace drawn from the
// report's aggregates (header.window.overview, computed in Python), and a way to pick another
// part: drag a time range on the strip (a click starts a window there), step to the previous or
// next window, jump to one of the longest idle gaps, or to the next launch of the kernel
// selected in the table. `fetchWindow(from_us, until_us, kernel)` gets
// the window's view model (the live widget asks its kernel, a file tab the server); a saved
// notebook with neither keeps showing the window it saved. A gap chosen, or evidence outside
// the window (report.js), is zoomed to and marked once its window has come.
import { h, fmtUs, fmtInt } from "./format.js";

const STRIP_H = 36;

/**
 * { el, goTo(t0, t1, after) }, or null when the view holds the whole report. goTo fetches the
 * window from a little before t0 and calls after(ctl) on the view drawn from it.
 * opts.fetchWindow(from_us, until_us, kernel) -> Promise<model> (kernel: from the next launch of
 * that kernel after from_us); opts.onModel(model, after) shows it; opts.selected() the kernels selected.
 */
export function windowChooser(hd, opts = {}) {
  const w = hd.window;
  const ov = w && w.overview;
  if (!ov) return null;
  const t0 = ov.start_us;
  const span = Math.max(ov.end_us - t0, 1e-9);
  const from = w.from_us ?? t0;
  const until = Math.min(w.until_us, ov.end_us);
  const g = { ov, t0, span, from, until, frac: (t) => Math.min(1, Math.max(0, (t - t0) / span)) };
  const status = h("span", { class: "ks-win-status" });
  const el = h("div", { class: "ks-window", "data-from-us": String(from), "data-until-us": String(until) });
  const buttons = [];
  const choose = chooser(opts, el, status, buttons);
  const { strip, canvas } = overviewStrip(g, choose);
  // From a little before t0, so that the start of what is asked for is not on the edge.
  const goTo = (a, b, after) =>
    choose(Math.max(t0, a - 0.05 * Math.max(b - a, 0.1 * (until - from))), null, null, after);
  const { prev, next, gapPick, kernelNext } = stepButtons(g, choose, goTo, status, buttons, opts);
  el.append(
    h(
      "div",
      { class: "ks-win-head" },
      h("b", { text: "Window " }),
      h("span", { class: "ks-win-range", text: `${fmtUs(from - t0)} – ${fmtUs(until - t0)} of ${fmtUs(span)}` }),
      h("span", {
        class: "ks-note",
        text:
          ` · ${fmtInt(w.launches)} of ${fmtInt(w.of_launches)} launches, `
          + `${fmtInt(w.host_spans)} of ${fmtInt(w.of_host_spans)} CPU ops and runtime calls`,
      }),
      " ",
      prev,
      " ",
      next,
      " ",
      gapPick,
      " ",
      kernelNext,
      " ",
      status
    ),
    strip
  );
  requestAnimationFrame(() => draw(canvas, ov));
  return { el, goTo };
}

/** Whether the window `w` (header.window) holds [t0, t1]; true for a view of the whole report. */
export function windowHolds(w, t0, t1) {
  if (!w || !w.overview) return true;
  // The first window holds all before it, the last all after it.
  const from = w.from_us ?? -Infinity;
  const until = w.until_us >= w.overview.end_us ? Infinity : w.until_us;
  return t0 >= from && t1 <= until;
}

/** choose(from_us, until_us, kernel, after): fetch that window and show it (opts.onModel, then
 * after(ctl)), the chooser's `buttons` off meanwhile; `status` says what happens, or why it cannot. */
function chooser({ fetchWindow, onModel }, el, status, buttons) {
  return (a, b, kernel, after) => {
    if (!fetchWindow) {
      status.textContent =
        "This saved view keeps the window it was saved with: another window needs the live kernel "
        + "(run the cell again) or the trace file (open it in JupyterLab).";
      el.scrollIntoView({ block: "nearest" });
      return;
    }
    status.textContent = "loading the window…";
    el.classList.add("ks-win-loading");
    for (const b2 of buttons) b2.disabled = true;
    fetchWindow(a, b, kernel)
      .then((model) => {
        if (!model) throw new Error("no data came back");
        onModel(model, after);
      })
      .catch((err) => {
        el.classList.remove("ks-win-loading");
        for (const b2 of buttons) b2.disabled = false;
        status.textContent = `cannot get that window (${err && err.message})`;
      });
  };
}

/** The buttons: the previous / next window, the longest idle gaps, the selected kernel's next launch. */
function stepButtons({ ov, t0, from, until }, choose, goTo, status, buttons, opts) {
  const width = until - from;
  const button = (cls, text, title, onclick, disabled) => {
    const b = h("button", { class: `ks-btn ${cls}`, text, title, onclick });
    b.disabled = !!disabled;
    buttons.push(b);
    return b;
  };
  const prev = button(
    "ks-win-prev",
    "◀ earlier",
    "the window before this one",
    () => choose(Math.max(t0, from - width), from),
    from <= t0
  );
  const next = button(
    "ks-win-next",
    "later ▶",
    "the window after this one",
    () => choose(until, null),
    until >= ov.end_us
  );
  const gaps = ov.gaps || [];
  const gapPick = gaps.length
    ? h(
        "select",
        {
          class: "ks-win-gaps",
          title: "the longest idle gaps of the whole trace",
          onchange: (e) => {
            const g = gaps[Number(e.target.value)];
            const end = g && g.start_us + g.duration_us;
            // The gap zoomed to and marked on the new window's timeline, as evidence is.
            if (g)
              goTo(g.start_us, end, (ctl) =>
                ctl.showEvidence({ view: "timeline", start_us: g.start_us, end_us: end }, null, true)
              );
          },
        },
        h("option", { value: "", text: "longest idle gaps…" }),
        gaps.map((g, i) => h("option", { value: String(i), text: g.label }))
      )
    : null;
  if (gapPick) buttons.push(gapPick);
  // The next launch of the kernel selected in the table, after this window's start.
  const kernelNext = button(
    "ks-win-kernel",
    "selected kernel ▶",
    "the window from the next launch of the kernel selected in the table",
    () => {
      const names = opts.selected ? opts.selected() : [];
      if (names.length !== 1) {
        status.textContent = "select one kernel in the table first";
        return;
      }
      choose(from, null, names[0]);
    }
  );
  return { prev, next, gapPick, kernelNext };
}

/** The overview strip of the whole trace, this window and the longest gaps marked on it: drag a
 * range (or click a point) on it to choose that part. */
function overviewStrip({ ov, t0, span, from, until, frac }, choose) {
  const canvas = h("canvas", { class: "ks-win-canvas", height: String(STRIP_H) });
  const current = h("div", {
    class: "ks-win-current",
    title: "the window this view holds",
    style: `left:${100 * frac(from)}%;width:${Math.max(0.2, 100 * (frac(until) - frac(from)))}%`,
  });
  const brush = h("div", { class: "ks-win-brush", style: "display:none" });
  const marks = (ov.gaps || []).map((g) =>
    h("div", {
      class: "ks-win-gap",
      title: g.label,
      style: `left:${100 * frac(g.start_us)}%;width:${Math.max(0.3, 100 * (frac(g.start_us + g.duration_us) - frac(g.start_us)))}%`,
    })
  );
  const strip = h(
    "div",
    {
      class: "ks-win-strip",
      title:
        "the whole trace: GPU busy (top), CPU ops and runtime calls (bottom); drag a range, or click, to look at that part",
    },
    canvas,
    ...marks,
    current,
    brush
  );
  let down = null;
  const at = (e) => {
    const r = strip.getBoundingClientRect();
    return Math.min(1, Math.max(0, (e.clientX - r.left) / Math.max(1, r.width)));
  };
  strip.addEventListener("mousedown", (e) => {
    down = at(e);
    brush.style.display = "";
    brush.style.left = `${100 * down}%`;
    brush.style.width = "0";
    e.preventDefault();
  });
  strip.addEventListener("mousemove", (e) => {
    if (down === null) return;
    const x = at(e);
    brush.style.left = `${100 * Math.min(x, down)}%`;
    brush.style.width = `${100 * Math.abs(x - down)}%`;
  });
  const up = (e) => {
    if (down === null) return;
    const x = at(e);
    const a = Math.min(x, down),
      b = Math.max(x, down);
    down = null;
    brush.style.display = "none";
    const px = (b - a) * strip.getBoundingClientRect().width;
    if (px < 3) choose(t0 + a * span, null);
    else choose(t0 + a * span, t0 + b * span);
  };
  strip.addEventListener("mouseup", up);
  strip.addEventListener("mouseleave", (e) => {
    if (down !== null) up(e);
  });
  return { strip, canvas };
}

/** GPU busy share per bin on top, the density of host spans under it. */
function draw(canvas, ov) {
  const cssW = canvas.clientWidth || 600;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(STRIP_H * dpr);
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.scale(dpr, dpr);
  const style = getComputedStyle(canvas);
  const accent = style.getPropertyValue("--ks-accent").trim() || "#4c78a8";
  const fg2 = style.getPropertyValue("--ks-fg2").trim() || "#888";
  const busy = ov.busy || [],
    host = ov.host_spans || [];
  const n = Math.max(busy.length, host.length, 1);
  const bw = cssW / n;
  const gpuH = STRIP_H * 0.68,
    hostH = STRIP_H - gpuH - 2;
  const hostMax = Math.max(1, ...host);
  ctx.fillStyle = accent;
  busy.forEach((v, i) => {
    const y = Math.max(v > 0 ? 1 : 0, v * gpuH);
    ctx.fillRect(i * bw, gpuH - y, Math.max(bw, 1), y);
  });
  ctx.globalAlpha = 0.6;
  ctx.fillStyle = fg2;
  host.forEach((v, i) => {
    const y = Math.max(v > 0 ? 1 : 0, (v / hostMax) * hostH);
    ctx.fillRect(i * bw, STRIP_H - y, Math.max(bw, 1), y);
  });
  ctx.globalAlpha = 1;
}
