// The details panel of the selected kernels (the Kernels tab, under the table): what they are,
// their launches summed (total / mean, min / max) and launch-shape ranges (table_stats.js), the
// tuning block (tuning.js), the Nsight Compute deep dive (kernel.js), the occupancy breakdown and
// curves of the first launch's shape (kernelscope/panels/shapes.py: occupancy_entries), the
// measured counters and stalls (measured.js) and the Nsight Compute metrics beside ours
// (kernelscope/trace/ncu/export.py: COMPARED_METRICS), and the capture of graph-replayed launches
// (graphs.js). The payload: kernelscope/view/report.py.
import { h, fmtUs, fmtPct, fmtInt, fmtBytes, fmtNum, vocab } from "./format.js";
import { str, int, num } from "./data.js";
import { launchesSummary, shapeCells } from "./table_stats.js";
import { counterBlock, stallBlock } from "./measured.js";
import { occupancyChart } from "./charts.js";
import { kernelDetail } from "./kernel.js";
import { tuningBlock } from "./tuning.js";
import { copyText } from "./files.js";
import { graphBlock } from "./graphs.js";

/** Details of the selected kernel(s): launches, op, source, occupancy breakdown and curves.
 * opts.requestCurves(shape) -> Promise<entry>: a live kernel computes a launch shape's curves;
 * opts.showLaunches: the tuning block's link to a candidate's launches. */
export function renderDetails(el, model, names, opts = {}) {
  if (!el) return;
  el.textContent = "";
  if (!names.length) {
    el.append(
      h("p", { class: "ks-empty", text: "Select a kernel row to see its launches, CPU op, source line and occupancy." })
    );
    return;
  }
  const k = model.tables.kernels;
  const nameStrings = k.strings.name;
  const wanted = new Set(names.map((n) => nameStrings.indexOf(n)));
  const idx = [];
  for (let i = 0; i < k.rows; i++) if (wanted.has(k.cols.name[i])) idx.push(i);
  if (!idx.length) return;
  const sums = launchSums(k, idx);
  // Launch shape over every selected launch: a range or "mixed" where they differ.
  const shape = shapeCells(model, launchesSummary(model, idx));
  el.append(infoBlock(model, names, idx, sums, shape));
  const graph = graphBlock(model, idx); // the capture of launches a CUDA graph replayed
  if (graph) el.append(graph);
  const tune = tuningBlock(model, names, new Set(sums.ops.keys()), opts);
  if (tune) el.append(tune);
  const deep = kernelDetail(model, idx); // Nsight Compute's measurements, when the report has them
  if (deep) el.append(deep);
  occupancySection(el, model, names, idx, shape, opts);
  const measured = counterBlock(model, idx);
  if (measured) el.append(measured);
  // Live (Proton) stalls; where Nsight Compute measured the launch its deep dive has the stall bars.
  const stalls = deep ? null : stallBlock(model, names);
  if (stalls) el.append(stalls);
  const ncu = ncuBlock(model, idx);
  if (ncu) el.append(ncu);
}

/** The selected launches' durations summed (total, min, max), their CPU ops counted, their sources. */
function launchSums(k, idx) {
  let total = 0,
    min = Infinity,
    max = -Infinity;
  const ops = new Map(),
    sources = new Set();
  for (const i of idx) {
    const d = k.cols.duration_us[i];
    total += d;
    min = Math.min(min, d);
    max = Math.max(max, d);
    const op = str(k, "op", i) || "(no CPU op)";
    ops.set(op, (ops.get(op) || 0) + 1);
    const src = str(k, "source", i);
    if (src) sources.add(src);
  }
  return { total, min, max, ops, sources };
}

/** What the selected kernels are, with a button that copies their full names, and their launches. */
function infoBlock(model, names, idx, { total, min, max, ops, sources }, shape) {
  const k = model.tables.kernels;
  const f = idx[0];
  const nameCode = k.cols.name[f];
  const fullName = names.length > 1 ? names.join("\n") : names[0];
  const copyBtn = h("button", {
    class: "ks-btn ks-copy-name",
    text: "copy name",
    title: "copy the full name as recorded",
    onclick: async () => {
      copyBtn.textContent = (await copyText(fullName)) ? "copied" : "copy failed";
      setTimeout(() => {
        copyBtn.textContent = "copy name";
      }, 1500);
    },
  });
  const kv = (rows) =>
    h(
      "table",
      { class: "ks-kv" },
      h(
        "tbody",
        {},
        rows
          .filter((r) => r && r[1] !== null)
          .map(([a, b]) => h("tr", {}, h("th", { text: a }), h("td", { text: b ?? "-" })))
      )
    );
  return h(
    "div",
    { class: "ks-detail-block" },
    h("h4", { text: names.length > 1 ? `${names.length} kernels selected` : model.header.names[nameCode] || names[0] }),
    h("div", { class: "ks-fullname-row" }, h("div", { class: "ks-fullname", text: fullName }), copyBtn),
    kv([
      ["what it is", ((model.header.name_notes || [])[nameCode] || {}).about || null],
      ["backend", str(k, "backend", f)],
      ["why this backend", ((model.header.name_notes || [])[nameCode] || {}).why || null],
      ["tensor cores", { 1: "yes", 0: "no" }[k.cols.tensor_cores ? k.cols.tensor_cores[f] : -1] || "unknown"],
      ["launches", fmtInt(idx.length)],
      ["total / mean", `${fmtUs(total)} / ${fmtUs(total / idx.length)}`],
      ["min / max", `${fmtUs(min)} / ${fmtUs(max)}`],
      [
        "CPU op",
        [...ops.entries()]
          .sort((a, b) => b[1] - a[1])
          .map(([o, n]) => `${o} ×${n}`)
          .join(", "),
      ],
      ["source", sources.size ? [...sources].slice(0, 3).join("; ") : "-"],
      [
        "grid / block",
        `${shape.grid.varies ? `${shape.grid.text} blocks` : dims(k, "grid", f)} / ${shape.block.varies ? "mixed" : dims(k, "block", f)}`
          + (shape.grid.varies || shape.block.varies
            ? ` (${[shape.grid.title, shape.block.title].filter(Boolean).join("; ")})`
            : ""),
      ],
      ["registers / thread", shape.regs.text + (shape.regs.title ? " (differs between launches)" : "")],
      ["shared memory / block", shape.smem.text + (shape.smem.title ? " (differs between launches)" : "")],
      ["waves", shape.waves.text + (shape.waves.title ? " (differs between launches)" : "")],
    ])
  );
}

/** The occupancy block of the first launch's shape (and its curves), asking a live kernel for
 * the curves where the payload has none; a note where the launches use several shapes. */
function occupancySection(el, model, names, idx, shape, opts) {
  const k = model.tables.kernels;
  const f = idx[0];
  const shapeEntries = model.header.shapes || [];
  const ci = shapeEntries.findIndex((c) => c.shape === k.cols.shape[f]);
  const cfg = shapeEntries[ci];
  if (cfg && cfg.occupancy !== undefined && !cfg.curves && opts.requestCurves && !cfg.requested) {
    // Ask Python (live widget) for this launch shape's curves, then redraw the details.
    cfg.requested = true;
    opts.requestCurves(cfg.shape).then((entry) => {
      if (entry && entry.curves) shapeEntries[ci] = entry;
      if (el.getAttribute("data-names") === JSON.stringify(names)) renderDetails(el, model, names, opts);
    });
  }
  el.setAttribute("data-names", JSON.stringify(names));
  const occ = occupancyBlock(cfg, k, f);
  const shapes = new Set(idx.map((i) => k.cols.shape[i]));
  if (shapes.size > 1) {
    // Not one launch's numbers without saying so: the breakdown is of the first launch's shape.
    occ.insertBefore(
      h("p", {
        class: "ks-note ks-shapes-note",
        text:
          `These ${fmtInt(idx.length)} launches use ${shapes.size} launch shapes `
          + `(occupancy ${shape.occ.text}); the breakdown below is that of the first launch (${dims(k, "grid", f)} × ${dims(k, "block", f)}). `
          + "Expand the row for each launch's shape.",
      }),
      occ.children[1] || null
    );
  }
  el.append(occ);
  if (occ.charts) el.append(occ.charts);
}

function occupancyBlock(cfg, k, f) {
  const block = h("div", { class: "ks-detail-block ks-occupancy" }, h("h4", { text: "Theoretical occupancy" }));
  const occ = num(k, "theoretical_occupancy", f);
  if (!cfg || cfg.occupancy === undefined) {
    block.append(
      h("p", {
        class: "ks-empty",
        text:
          occ === null
            ? "Not computed for this launch (launch shape or device properties not recorded)."
            : `${fmtPct(occ, 1)} (limited by ${str(k, "occupancy_limiter", f) || "-"})`,
      })
    );
    return block;
  }
  const lim = (cfg.limiters || []).join(", ") || "-";
  const rows = [
    ["occupancy", `${fmtPct(cfg.occupancy, 1)} (computed by kernelscope, CUDA occupancy calculator)`],
    ["active blocks / SM", fmtOpt(cfg.active_blocks_per_sm)],
    ["limited by", lim],
    ["block limit: registers", fmtOpt(cfg.block_limit_registers)],
    ["block limit: shared memory", fmtOpt(cfg.block_limit_shared_mem)],
    ["block limit: warps", fmtOpt(cfg.block_limit_warps)],
    ["block limit: blocks / SM", fmtOpt(cfg.block_limit_blocks)],
  ];
  block.append(
    h(
      "table",
      { class: "ks-kv" },
      h(
        "tbody",
        {},
        rows.map(([a, b]) => h("tr", {}, h("th", { text: a }), h("td", { text: b })))
      )
    )
  );
  if ((cfg.hints || []).length) {
    block.append(
      h(
        "div",
        { class: "ks-hints" },
        h("b", { text: "What would raise it: " }),
        h(
          "ul",
          {},
          cfg.hints.map((t) => h("li", { text: t }))
        )
      )
    );
  }
  if (!cfg.curves) {
    block.append(
      h("p", {
        class: "ks-note ks-no-curves",
        text: cfg.requested
          ? "Computing the occupancy curves…"
          : "Occupancy curves are saved for the costliest launch shapes only; a live kernel computes the others.",
      })
    );
  }
  if (cfg.curves) block.charts = curveCharts(cfg);
  return block;
}

/** Occupancy as each launch parameter varies (threads, registers, shared memory). */
function curveCharts(cfg) {
  const charts = h("div", { class: "ks-occ-charts" });
  charts.append(
    h("div", {
      class: "ks-note",
      text: "Occupancy as one launch parameter varies, the others held (as Nsight Compute's occupancy graphs); the red dot is this launch.",
    })
  );
  const graphs = [
    ["block", "threads per block", "Varying block size", cfg.threads],
    ["registers", "registers per thread", "Varying register count", cfg.registers],
    ["smem", "shared memory per block (bytes)", "Varying shared memory", cfg.smem],
  ];
  for (const [key, field, title, x] of graphs) {
    const c = h("div", { class: "ks-chart ks-occ-chart", "data-curve": key });
    charts.append(c);
    occupancyChart(c, cfg.curves[key] || [], { x, y: cfg.occupancy }, { field, title });
  }
  return charts;
}

/** An ncu metric in its unit (the column name's suffix says which). */
function fmtNcu(col, v) {
  if (v === null || Number.isNaN(v)) return "-";
  if (col.endsWith("_pct")) return fmtPct(v, 1, 100);
  if (col.endsWith("_ns")) return fmtUs(v / 1000);
  if (col.endsWith("_bytes")) return fmtBytes(v);
  if (col.endsWith("_hz")) return `${(v / 1e9).toFixed(2)} GHz`;
  return Number.isInteger(v) ? fmtInt(v) : fmtNum(v, 2);
}

function ncuBlock(model, idx) {
  const cols = model.header.ncu_columns || [];
  if (!cols.length) return null;
  const k = model.tables.kernels;
  const mean = (c) => {
    if (!k.cols[c]) return null;
    const vals = idx.map((i) => k.cols[c][i]).filter((v) => !Number.isNaN(v));
    return vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : null;
  };
  const have = new Set(cols);
  const cfg = (model.header.shapes || []).find((c) => c.shape === k.cols.shape[idx[0]]) || {};
  const ours = (key) => {
    if (key === "theoretical_occupancy") {
      const v = mean(key);
      return v === null ? "-" : fmtPct(v, 1);
    }
    if (key === "duration_us") return fmtUs(mean(key));
    if (key && key.startsWith("block_limit_")) return cfg[key] ?? "-";
    return "";
  };
  // The ncu metrics shown beside ours first: kernelscope.trace.ncu.export.COMPARED_METRICS, from the payload.
  const first = vocab("ncu")
    .map((m) => [m.label, m.column, m.ours])
    .filter(([, c]) => have.has(c));
  const stalls = cols.filter((c) => /stall/i.test(c));
  const rest = cols.filter((c) => !first.some(([, f]) => f === c) && !stalls.includes(c));
  const head = h(
    "tr",
    {},
    h("th", { text: "" }),
    h("th", { text: "kernelscope" }),
    h("th", { text: "Nsight Compute" })
  );
  const rows = [
    ...first.map(([label, c, key]) => [label, ours(key), fmtNcu(c, mean(c))]),
    ...stalls.map((c) => [c.replace(/^ncu_/, "").replace(/_/g, " "), "", fmtNcu(c, mean(c))]),
  ];
  const block = h(
    "div",
    { class: "ks-detail-block ks-ncu" },
    h("h4", { text: `Nsight Compute (measured${idx.length > 1 ? `, mean of ${idx.length} launches` : ""})` }),
    h(
      "table",
      { class: "ks-kv ks-ncu-compare" },
      h("thead", {}, head),
      h(
        "tbody",
        {},
        rows.map(([a, b, c]) =>
          h("tr", { "data-metric": a }, h("th", { text: a }), h("td", { text: b }), h("td", { text: c }))
        )
      )
    )
  );
  if (rest.length) {
    block.append(
      h(
        "details",
        {},
        h("summary", { text: `all ${cols.length} metrics` }),
        h(
          "table",
          { class: "ks-kv" },
          h(
            "tbody",
            {},
            rest.map((c) =>
              h("tr", {}, h("th", { text: c.replace(/^ncu_/, "") }), h("td", { text: fmtNcu(c, mean(c)) }))
            )
          )
        )
      )
    );
  }
  return block;
}

function dims(k, which, i) {
  const x = int(k, `${which}_x`, i);
  if (x === null) return "-";
  return [x, int(k, `${which}_y`, i) ?? 1, int(k, `${which}_z`, i) ?? 1].join("×");
}

function fmtOpt(v) {
  return v === null || v === undefined ? "-" : String(v);
}
