// The kernel deep dive: Nsight Compute's details page made short, for a launch it measured.
// Speed of light, the roofline dot, achieved vs theoretical occupancy, memory, stall reasons,
// source hot spots with their SASS, and Nsight Compute's own advice. The figures and their
// words come computed from Python (kernelscope/analysis/kernel_detail.py, header.kernel_detail); this
// module only draws them, in plain DOM and SVG. Recorded text goes in as textContent only.
import { h, fmtUs, fmtPct, fmtNum, classFrom, vocab } from "./format.js";

const SVGNS = "http://www.w3.org/2000/svg";

/** An SVG element; "text" sets textContent, other attributes are set as given. */
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined) continue;
    if (k === "text") el.textContent = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) el.append(c);
  return el;
}

const rate = (v, unit) => {
  if (v === null || v === undefined) return "-";
  const a = Math.abs(v);
  for (const [k, p] of [
    [1e15, "P"],
    [1e12, "T"],
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
  ])
    if (a >= k) return `${(v / k).toFixed(2)} ${p}${unit}`;
  return `${v.toFixed(2)} ${unit}`;
};
const decBytes = (b) => rate(b, "B");
const times100 = (v) => (v === null || v === undefined ? null : v * 100);
/** The Nsight Compute metric behind a figure (sent by Python), for its tooltip. */
const metric = (group, key) =>
  group && group.metrics && group.metrics[key] ? `Nsight Compute metric ${group.metrics[key]}` : null;

function block(title, source, ...body) {
  return h(
    "div",
    { class: "ks-kd-block", "data-kd": title },
    h("h5", { class: "ks-kd-title", text: title }),
    source ? h("div", { class: "ks-kd-src", text: source }) : null,
    ...body
  );
}

/** Horizontal percentage bars: rows of [label, value 0..100, title, strong]. */
function pctBars(rows, { width = 260 } = {}) {
  const bar = 14,
    gap = 6,
    labelW = 110,
    w = labelW + width + 52;
  const svg = s("svg", { class: "ks-kd-bars", width: w, height: rows.length * (bar + gap), role: "img" });
  rows.forEach(([label, v, title, strong], i) => {
    const y = i * (bar + gap);
    const g = s("g", { "data-bar": label });
    if (title) g.append(s("title", { text: title }));
    g.append(
      s("text", {
        x: labelW - 6,
        y: y + bar - 3,
        "text-anchor": "end",
        class: strong ? "ks-kd-strong" : "",
        text: label,
      })
    );
    g.append(s("rect", { x: labelW, y, width, height: bar, class: "ks-kd-track" }));
    const val = v === null || v === undefined || Number.isNaN(v) ? 0 : Math.max(0, Math.min(100, v));
    g.append(
      s("rect", {
        x: labelW,
        y,
        width: (val / 100) * width,
        height: bar,
        class: strong ? "ks-kd-fill ks-kd-fill-strong" : "ks-kd-fill",
      })
    );
    g.append(
      s("text", {
        x: labelW + width + 6,
        y: y + bar - 3,
        class: "ks-kd-val",
        text: fmtPct(v, 1, 100),
      })
    );
    svg.append(g);
  });
  return svg;
}

// The roofline's size and margins (left, right, top, bottom), px.
const ROOF_BOX = { W: 340, H: 210, L: 48, R: 10, T: 10, B: 30 };

/** Log-log roofline of one launch: its memory roofs and compute peak, one dot per memory level. */
function rooflineChart(roof, levels) {
  const { W, H, L, R, T, B } = ROOF_BOX;
  const pts = (roof.points || []).filter((p) => p.intensity > 0 && p.flops_per_s > 0);
  const peak = roof.peak_flops_per_s;
  const ceil = (roof.ceilings || []).filter((c) => c.bytes_per_s > 0);
  const ridges = ceil.map((c) => peak / c.bytes_per_s);
  const xs = [...pts.map((p) => p.intensity), ...ridges];
  const x0 = Math.min(...xs) / 8,
    x1 = Math.max(...xs) * 8;
  const ys = [...pts.map((p) => p.flops_per_s), peak];
  const y1 = Math.max(...ys) * 3,
    y0 = Math.min(...ys, ...ceil.map((c) => c.bytes_per_s * x0)) / 3;
  const lx = (x) => L + ((Math.log10(x) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0))) * (W - L - R);
  const ly = (y) => H - B - ((Math.log10(y) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0))) * (H - T - B);
  const svg = s("svg", { class: "ks-kd-roofline", width: W, height: H, role: "img" });
  svg.append(s("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "ks-kd-plot" }));
  rooflineAxes(svg, { x0, x1, y0, y1, lx, ly });
  ceil.forEach((c) => {
    const ridge = peak / c.bytes_per_s;
    const g = s("g", {
      "data-ceiling": c.level,
      class: `ks-kd-ceiling${classFrom(vocab("levels"), c.level, "ks-kd-level-")}`,
    });
    g.append(s("title", { text: `${levels[c.level] || c.level} roof: ${rate(c.bytes_per_s, "B/s")} peak bandwidth` }));
    g.append(
      s("polyline", { points: `${lx(x0)},${ly(c.bytes_per_s * x0)} ${lx(ridge)},${ly(peak)}`, class: "ks-kd-roof" })
    );
    svg.append(g);
  });
  const minRidge = Math.min(...ridges.filter((r) => r > 0), x1);
  svg.append(s("line", { x1: lx(minRidge), x2: lx(x1), y1: ly(peak), y2: ly(peak), class: "ks-kd-peak" }));
  svg.append(
    s("text", {
      x: lx(x1) - 4,
      y: ly(peak) - 4,
      "text-anchor": "end",
      class: "ks-kd-roof-label",
      text: `${roof.label} peak ${rate(peak, "FLOP/s")}`,
    })
  );
  for (const p of pts) {
    const g = s("g", {
      class: `ks-kd-dot${classFrom(vocab("levels"), p.level, "ks-kd-level-")}`,
      "data-level": p.level,
    });
    g.append(
      s("title", {
        text: `${levels[p.level] || p.level}: ${fmtNum(p.intensity, 3)} FLOP/byte, ${rate(p.flops_per_s, "FLOP/s")}, ${rate(p.bytes_per_s, "B/s")}`,
      })
    );
    g.append(s("circle", { cx: lx(p.intensity), cy: ly(p.flops_per_s), r: 4.5 }));
    svg.append(g);
  }
  return svg;
}

/** The roofline's log axes: decade ticks and their labels, the axis titles. */
function rooflineAxes(svg, { x0, x1, y0, y1, lx, ly }) {
  const { W, H, L, R, T, B } = ROOF_BOX;
  for (let e = Math.ceil(Math.log10(x0)); e <= Math.floor(Math.log10(x1)); e++) {
    const x = lx(10 ** e);
    svg.append(s("line", { x1: x, x2: x, y1: H - B, y2: H - B + 3, class: "ks-kd-axis" }));
    svg.append(s("text", { x, y: H - B + 13, "text-anchor": "middle", class: "ks-kd-tick", text: `1e${e}` }));
  }
  for (let e = Math.ceil(Math.log10(y0)); e <= Math.floor(Math.log10(y1)); e++) {
    const y = ly(10 ** e);
    svg.append(
      s("text", { x: L - 4, y: y + 3, "text-anchor": "end", class: "ks-kd-tick", text: rate(10 ** e, "").trim() })
    );
  }
  svg.append(
    s("text", {
      x: (L + W - R) / 2,
      y: H - 2,
      "text-anchor": "middle",
      class: "ks-kd-axis-label",
      text: "arithmetic intensity (FLOP/byte)",
    })
  );
  svg.append(
    s("text", {
      x: 10,
      y: (T + H - B) / 2,
      "text-anchor": "middle",
      transform: `rotate(-90 10 ${(T + H - B) / 2})`,
      class: "ks-kd-axis-label",
      text: "FLOP/s",
    })
  );
}

/** The colour key of the roofline: one entry per memory level (roof and dot share a colour). */
function rooflineLegend(roof, levels) {
  return h(
    "div",
    { class: "ks-legend" },
    (roof.ceilings || []).map((c) => {
      const p = (roof.points || []).find((x) => x.level === c.level) || {};
      return h(
        "span",
        { class: `ks-legend-item${classFrom(vocab("levels"), c.level, "ks-kd-key-")}` },
        h("span", { class: "ks-kd-key", text: "●" }),
        ` ${levels[c.level] || c.level}: roof ${rate(c.bytes_per_s, "B/s")}, dot ${fmtNum(p.intensity, 3)} FLOP/byte`
      );
    })
  );
}

function sassListing(rows) {
  return h(
    "pre",
    { class: "ks-kd-sass" },
    rows.map((r) =>
      h(
        "div",
        { class: r.hot ? "ks-kd-sass-hot" : "" },
        h("span", { class: "ks-kd-sass-pc", text: `0x${r.pc.toString(16).slice(-5)}` }),
        h("span", { class: "ks-kd-sass-n", text: r.samples ? String(Math.round(r.samples)) : "" }),
        h("span", { text: r.sass })
      )
    )
  );
}

/** Speed of light: compute and memory throughput, % of peak, and its verdict. */
function solBlock(e) {
  const sol = e.sol || {};
  return block(
    "Speed of light",
    "measured by Nsight Compute (% of peak sustained throughput)",
    pctBars([
      ["Compute (SM)", sol.compute_pct, metric(sol, "compute_pct"), true],
      ["Memory", sol.memory_pct, metric(sol, "memory_pct"), true],
      ["DRAM", sol.dram_pct, metric(sol, "dram_pct")],
      ["L2", sol.l2_pct, metric(sol, "l2_pct")],
      ["L1/TEX", sol.l1_pct, metric(sol, "l1_pct")],
    ]),
    sol.verdict ? h("p", { class: "ks-kd-verdict", text: sol.verdict }) : null
  );
}

/** The launch's roofline (one dot per memory level) and where it puts the launch. */
function rooflineBlock(e, levels) {
  const roof = e.roofline;
  return roof && (roof.points || []).some((p) => p.intensity > 0 && p.flops_per_s > 0)
    ? block(
        `Roofline (${roof.label})`,
        roof.source,
        rooflineChart(roof, levels),
        rooflineLegend(roof, levels),
        // One verdict per launch: the speed of light's; the sentence (Python) says where the DRAM roofline puts it.
        h("p", {
          class: "ks-kd-verdict",
          text:
            roof.verdict
            || `${roof.bound || "-"}-bound at DRAM: ${rate((roof.points.find((p) => p.level === "dram") || {}).flops_per_s, "FLOP/s")}, `
              + `${roof.roof_share === null ? "-" : fmtPct(roof.roof_share)} of the attainable roof`,
        }),
        (roof.other_precisions || []).length
          ? h("div", {
              class: "ks-kd-note",
              text: `also: ${roof.other_precisions.map((o) => `${o.label} ${rate(o.flops_per_s, "FLOP/s")}`).join(", ")}`,
            })
          : null
      )
    : block(
        "Roofline",
        "measured by Nsight Compute",
        h("p", {
          class: "ks-empty",
          text: "No floating-point work counted for this launch (a copy, integer or control kernel).",
        })
      );
}

/** Achieved against theoretical occupancy, and the blocks per SM each limit allows. */
function occupancyBlock(e) {
  const occ = e.occupancy || {};
  const limitRows = ["registers", "shared_mem", "warps", "blocks"].map((k) =>
    h(
      "tr",
      {},
      h("th", { text: k.replace("_", " ") }),
      h("td", { class: "ks-num", text: occ.limits ? String(occ.limits[k] ?? "-") : "-" }),
      h("td", { class: "ks-num", text: occ.ncu_limits && occ.ncu_limits[k] !== null ? String(occ.ncu_limits[k]) : "-" })
    )
  );
  return block(
    "Occupancy",
    "achieved: measured by Nsight Compute; theoretical: computed by kernelscope with the driver's shared-memory carveout",
    pctBars([
      ["achieved", times100(occ.achieved), metric(occ, "achieved"), true],
      ["theoretical", times100(occ.theoretical ?? occ.theoretical_ncu), occ.source ? occ.source.theoretical : null],
      ["ncu theoretical", times100(occ.theoretical_ncu), metric(occ, "theoretical_ncu")],
    ]),
    h("p", {
      class: "ks-kd-verdict",
      text: `limited by ${occ.limiter || "-"}; ${fmtNum(occ.achieved_warps, 1)} of ${fmtNum(occ.theoretical_warps, 1)} warps per SM active; ${fmtNum(occ.waves, 2)} waves`,
    }),
    h(
      "table",
      { class: "ks-kv ks-kd-limits" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { text: "blocks per SM by" }),
          h("th", { text: "kernelscope" }),
          h("th", { text: "Nsight Compute" })
        )
      ),
      h("tbody", {}, limitRows)
    )
  );
}

/** Bytes moved per memory level against its peak bandwidth, hit rates, sectors per request. */
function memoryBlock(e, levels) {
  const mem = e.memory || {};
  const memBars = (mem.levels || []).map((l) => [
    `${levels[l.level] || l.level} ${decBytes(l.bytes)}`,
    l.peak_bytes_per_s ? (l.bytes_per_s / l.peak_bytes_per_s) * 100 : null,
    `${rate(l.bytes_per_s, "B/s")} of ${rate(l.peak_bytes_per_s, "B/s")} peak`,
    l.level === "dram",
  ]);
  const spr = (v) => (v === null || v === undefined ? "-" : fmtNum(v, 1));
  return block(
    "Memory",
    "measured by Nsight Compute (bytes moved, % of each level's peak bandwidth)",
    pctBars(memBars),
    h(
      "table",
      { class: "ks-kv" },
      h(
        "tbody",
        {},
        h(
          "tr",
          {},
          h("th", { text: "L1 / L2 hit rate" }),
          h("td", { text: `${fmtPct(mem.l1_hit_pct, 1, 100)} / ${fmtPct(mem.l2_hit_pct, 1, 100)}` })
        ),
        h(
          "tr",
          { "data-metric": "sectors per request" },
          h("th", { text: "sectors / request (load, store)" }),
          h("td", { text: `${spr(mem.load_sectors_per_request)}, ${spr(mem.store_sectors_per_request)}` })
        ),
        h(
          "tr",
          { "data-metric": "bytes used" },
          h("th", { text: "fetched bytes used (load, store)" }),
          h("td", {
            text: `${mem.load_efficiency == null ? "-" : fmtPct(mem.load_efficiency, 0)}, ${mem.store_efficiency == null ? "-" : fmtPct(mem.store_efficiency, 0)}`,
          })
        )
      )
    ),
    mem.verdict
      ? h("p", { class: "ks-kd-verdict ks-kd-poor", title: mem.verdict_source || "", text: mem.verdict })
      : null
  );
}

/** Warp-stall reasons by share of samples, the top one with what usually fixes it. */
function stallsBlock(e) {
  const st = e.stalls || {};
  const bars = st.bars || [];
  return block(
    "Warp stalls",
    `${st.source || "measured by Nsight Compute"}${st.samples ? `, ${Math.round(st.samples).toLocaleString("en-US")} samples` : ""}`,
    bars.length
      ? pctBars(
          bars.map((b) => [b.reason, b.share * 100, `${b.title}: ${b.meaning}. Usually fixed by: ${b.fix}`, false])
        )
      : h("p", { class: "ks-empty", text: "No stall samples." }),
    bars.length
      ? h(
          "div",
          { class: "ks-kd-stall-top" },
          h("b", { text: `${bars[0].reason}: ` }),
          `${bars[0].title}. ${bars[0].meaning}. `,
          h("i", { text: `What usually fixes it: ${bars[0].fix}.` })
        )
      : null
  );
}

/** The source lines with the most PC samples, each with its SASS. */
function hotspotsBlock(e) {
  const hs = e.hotspots || [];
  return block(
    "Source hot spots",
    "PC samples measured by Nsight Compute, per source line (or instruction, for kernels without line info)",
    hs.length
      ? h(
          "ol",
          { class: "ks-kd-hot" },
          hs.map((x) =>
            h(
              "li",
              { "data-location": x.location },
              h(
                "details",
                {},
                h(
                  "summary",
                  {},
                  h("span", { class: "ks-kd-loc", text: x.location }),
                  " ",
                  h("span", {
                    class: "ks-bar",
                    style: `width:${Math.max(1, Math.round(x.share * 80))}px;background:var(--ks-accent)`,
                  }),
                  " ",
                  h("span", {
                    text: `${fmtPct(x.share)} of samples${x.top_stall ? `, mostly ${x.top_stall}` : ""}`,
                    title: x.top_stall_title || "",
                  }),
                  x.text ? h("code", { class: "ks-kd-code", text: x.text.trim() }) : null
                ),
                (x.sass || []).length
                  ? sassListing(x.sass)
                  : h("p", { class: "ks-empty", text: "No SASS kept for this line." })
              )
            )
          )
        )
      : h("p", {
          class: "ks-empty",
          text: "No PC samples in this report (profile with the SourceCounters section, e.g. --set full).",
        })
  );
}

/** Nsight Compute's own rule results, as it wrote them. */
function adviceBlock(e) {
  const adv = e.advice || [];
  return block(
    "Nsight Compute's advice",
    "rule results of Nsight Compute, as it wrote them; the speedup is its estimate",
    adv.length
      ? h(
          "ul",
          { class: "ks-kd-advice" },
          adv.map((a) =>
            h(
              "li",
              { "data-rule": a.rule || "" },
              h(
                "details",
                {},
                h(
                  "summary",
                  {},
                  h("b", { text: a.title || a.rule || "" }),
                  a.speedup_pct
                    ? h("span", {
                        class: "ks-kd-speedup",
                        text: ` est. speedup ${a.speedup_pct.toFixed(0)}%${a.speedup_type === "local" ? " (local)" : ""}`,
                      })
                    : null
                ),
                h("div", { class: "ks-kd-msg", text: a.message || "" })
              )
            )
          )
        )
      : h("p", { class: "ks-empty", text: "Nsight Compute had no advice for this launch." })
  );
}

/** The deep dive of one measured launch `e` (kd: the payload's kernel_detail). */
function render(e, kd) {
  const levels = kd.levels || {};
  const el = h("div", { class: "ks-kd-grid" });
  el.append(
    solBlock(e),
    rooflineBlock(e, levels),
    occupancyBlock(e),
    memoryBlock(e, levels),
    stallsBlock(e),
    hotspotsBlock(e),
    adviceBlock(e)
  );
  return el;
}

/**
 * The deep dive for the selected launches (`idx`: kernel-table rows), or null when the report
 * has no Nsight Compute measurements. Several measured launches: a picker, the longest first.
 */
export function kernelDetail(model, idx) {
  const kd = model.header.kernel_detail;
  if (!kd || !kd.launches) return null;
  const k = model.tables.kernels;
  const col = k.cols.ncu_id;
  const ids = [];
  if (col)
    for (const i of idx) {
      const v = col[i];
      if (!Number.isNaN(v) && kd.launches[String(v)] && !ids.includes(v)) ids.push(v);
    }
  const root = h("div", { class: "ks-detail-block ks-kd" });
  if (!ids.length) {
    root.append(
      h("h4", { text: "Nsight Compute deep dive" }),
      h("p", {
        class: "ks-empty",
        text: "Nsight Compute did not profile these launches (a --kernels filter or --launches limit, or the replay did not run them).",
      })
    );
    return root;
  }
  ids.sort((a, b) => (kd.launches[String(b)].duration_us || 0) - (kd.launches[String(a)].duration_us || 0));
  const body = h("div", {});
  const head = h("div", { class: "ks-kd-head" });
  const show = (id) => {
    const e = kd.launches[String(id)];
    head.textContent = "";
    head.append(
      h("h4", { text: "Why is this kernel slow? Nsight Compute's measurements" }),
      h("div", {
        class: "ks-kd-sub",
        text: `launch ${e.id} · ${fmtUs(e.duration_us)} · ${e.source}${e.nvtx ? ` · NVTX ${e.nvtx}` : ""}`,
      })
    );
    if (ids.length > 1) {
      const sel = h(
        "select",
        { class: "ks-kd-pick", onchange: (ev) => show(Number(ev.target.value)) },
        ids.map((i) =>
          h("option", { value: String(i), text: `launch ${i} (${fmtUs(kd.launches[String(i)].duration_us)})` })
        )
      );
      sel.value = String(id);
      head.append(h("label", { class: "ks-kd-sub" }, `${ids.length} measured launches: `, sel));
    }
    body.textContent = "";
    body.append(render(e, kd));
    root.setAttribute("data-launch", String(id));
  };
  root.append(head, body);
  show(ids[0]);
  if (kd.note) root.append(h("p", { class: "ks-note", text: kd.note }));
  return root;
}
