// Vega-Lite charts (bundled vega-embed, no CDN): backends, occupancy curves, roofline.
import embed from "vega-embed";
import { backendColor } from "./format.js";

const OPTS = { actions: false, renderer: "svg", config: {
  background: null, axis: { labelFontSize: 10, titleFontSize: 11 }, legend: { labelFontSize: 10 },
  view: { stroke: null } } };

function themed(spec) {
  // Inherit the notebook's text colour (dark themes) through a CSS variable read at render time.
  const fg = getComputedStyle(document.body).getPropertyValue("--jp-ui-font-color1").trim();
  if (!fg) return spec;
  return { ...spec, config: { axis: { labelColor: fg, titleColor: fg, domainColor: fg, tickColor: fg },
    legend: { labelColor: fg, titleColor: fg }, title: { color: fg } } };
}

export async function show(el, spec) {
  try {
    const res = await embed(el, themed(spec), OPTS);
    return res;
  } catch (err) {
    el.textContent = `chart failed: ${err && err.message}`;
    return null;
  }
}

/** The backend colour scale over the labels present (so legends list only those). */
function colorScale(labels) {
  const domain = [...new Set(labels.filter(Boolean))];
  return { domain, range: domain.map(backendColor) };
}

export function backendSpec(backends) {
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    width: 420, height: { step: 20 },
    data: { values: backends.map((b) => ({ ...b, gpu_ms: (b.gpu_time_us || 0) / 1000 })) },
    mark: { type: "bar", tooltip: true },
    encoding: {
      y: { field: "backend", type: "nominal", sort: "-x", title: null },
      x: { field: "gpu_ms", type: "quantitative", title: "GPU time (ms)" },
      color: { field: "backend", type: "nominal", scale: colorScale(backends.map((b) => b.backend)), legend: null },
      row: backends.some((b) => b.device && b.device !== "CUDA") ? { field: "device", type: "nominal" } : undefined,
      tooltip: [
        { field: "device", type: "nominal" }, { field: "backend", type: "nominal" },
        { field: "launches", type: "quantitative" },
        { field: "gpu_ms", type: "quantitative", title: "GPU time (ms)", format: ".3f" },
        { field: "share", type: "quantitative", format: ".1%" },
      ],
    },
  };
}

/** ncu-style occupancy graph: occupancy vs one launch parameter, the current launch marked. */
export function occupancySpec(points, current, { field, title }) {
  const values = points.filter((p) => p[1] !== null).map(([x, y]) => ({ x, occupancy: y }));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    width: 220, height: 120, title: { text: title, fontSize: 11 },
    layer: [
      { data: { values }, mark: { type: "line", interpolate: "step-after", tooltip: true },
        encoding: { x: { field: "x", type: "quantitative", title: field },
                    y: { field: "occupancy", type: "quantitative", axis: { format: "%" }, scale: { domain: [0, 1] }, title: "occupancy" } } },
      { data: { values: [{ x: current.x, occupancy: current.y }] },
        mark: { type: "point", filled: true, size: 70, color: "#d62728", tooltip: true },
        encoding: { x: { field: "x", type: "quantitative" }, y: { field: "occupancy", type: "quantitative" } } },
    ],
  };
}

/** Roofline: achieved FLOP/s vs arithmetic intensity under memory and compute ceilings. */
export function rooflineSpec(roof) {
  const pts = (roof.points || []).filter((p) => p.intensity > 0 && p.flops_per_s > 0);
  const ceilings = roof.ceilings || [];
  const xs = pts.map((p) => p.intensity);
  const lo = Math.min(...xs, ...ceilings.map((c) => c.peak_flops_per_s / c.bandwidth_bytes_per_s / 1000)) / 2;
  const hi = Math.max(...xs, ...ceilings.map((c) => (c.peak_flops_per_s / c.bandwidth_bytes_per_s) * 10)) * 2;
  const lines = [];
  const labels = [];
  for (const c of ceilings) {
    const ridge = c.peak_flops_per_s / c.bandwidth_bytes_per_s;
    for (const x of [lo, ridge, hi]) {
      lines.push({ ceiling: c.label || "peak", intensity: x, flops_per_s: Math.min(c.peak_flops_per_s, c.bandwidth_bytes_per_s * x) });
    }
    labels.push({ ceiling: `${c.label || "peak"} (${c.source || "datasheet"})`, intensity: hi, flops_per_s: c.peak_flops_per_s });
  }
  const x = { field: "intensity", type: "quantitative", scale: { type: "log", domain: [lo, hi] },
    title: "arithmetic intensity (FLOP/byte)", axis: { format: "~s" } };
  const y = { field: "flops_per_s", type: "quantitative", scale: { type: "log" }, title: "achieved FLOP/s",
    axis: { format: "~s" } };
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    width: 520, height: 300,
    layer: [
      { data: { values: lines }, mark: { type: "line", strokeDash: [4, 3], clip: true },
        encoding: { x, y, detail: { field: "ceiling" }, color: { value: "#888" } } },
      { data: { values: labels }, mark: { type: "text", align: "right", dy: -6, fontSize: 10, color: "#888" },
        encoding: { x: { field: "intensity", type: "quantitative" }, y: { field: "flops_per_s", type: "quantitative" },
          text: { field: "ceiling" } } },
      { data: { values: pts }, mark: { type: "point", filled: true, size: 60, tooltip: true },
        encoding: { x, y,
          color: { field: "backend", type: "nominal", scale: colorScale(pts.map((p) => p.backend)) },
          tooltip: [{ field: "name", type: "nominal", title: "kernel" }, { field: "op", type: "nominal" },
            { field: "backend", type: "nominal" }, { field: "precision", type: "nominal" },
            { field: "intensity", type: "quantitative", format: ".2f", title: "FLOP/byte" },
            { field: "flops_per_s", type: "quantitative", format: ".3s", title: "FLOP/s" },
            { field: "roof_share", type: "quantitative", format: ".1%", title: "of attainable" },
            { field: "bound", type: "nominal" }] } },
    ],
  };
}
