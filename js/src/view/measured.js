// Details-panel blocks for what the hardware measured while the run went: PM-sampled counters
// (time-weighted over the selected launches) and warp-stall shares. Every label, meaning and
// source comes from the payload header (kernelscope/panels/measured.py: counter_panel, stalls_panel;
// the labels: kernelscope/trace/counters.py DERIVED; the figures: kernelscope/analysis/counters.py,
// kernelscope/analysis/stalls.py); nothing about counters or stalls is decided here.
import { h, fmtInt, fmtNum, fmtPct } from "./format.js";

/** The counter tracks the report has (header.counters.tracks): column, label, short, unit, meaning. */
export function counterTracks(model) {
  return (model.header.counters && model.header.counters.tracks) || [];
}

/** A counter's value in its unit: "87%", "1523 GB/s". */
export function counterText(track, v, digits = 0) {
  if (v === null || v === undefined || Number.isNaN(v)) return "-";
  return track.unit === "%" ? fmtPct(v, digits, 100) : `${fmtNum(v, digits)} ${track.unit}`;
}

/** Counter columns of the selected launches, weighted by launch time (as kernel_counters does). */
export function counterBlock(model, idx) {
  const hd = model.header.counters;
  const k = model.tables.kernels;
  if (!hd || !k.cols.sm_active_pct) return null;
  const dur = k.cols.duration_us;
  const mean = (col) => {
    const a = k.cols[col];
    if (!a) return null;
    let s = 0,
      w = 0;
    for (const i of idx) {
      const v = a[i];
      if (!Number.isNaN(v)) {
        s += v * dur[i];
        w += dur[i];
      }
    }
    return w > 0 ? s / w : null;
  };
  const samples = idx
    .map((i) => (k.cols.counter_samples ? k.cols.counter_samples[i] : NaN))
    .filter((v) => !Number.isNaN(v))
    .sort((a, b) => a - b);
  const med = samples.length ? samples[samples.length >> 1] : null;
  const rows = counterTracks(model).map((track) => {
    const col = track.column;
    const v = mean(col);
    const bar =
      track.unit === "%" && v !== null
        ? h("span", {
            class: "ks-bar",
            style: `width:${Math.max(1, Math.round(Math.min(100, v) * 0.8))}px;background:var(--ks-accent)`,
          })
        : null;
    return h(
      "tr",
      { "data-metric": col, title: track.meaning || null },
      h("th", { text: track.label }),
      h("td", {}, bar, ` ${counterText(track, v, track.unit === "%" ? 1 : 0)}`)
    );
  });
  const few = med !== null && med < 4;
  return h(
    "div",
    { class: "ks-detail-block ks-counters" },
    h("h4", {
      text: `Hardware counters (measured by ${hd.source}${idx.length > 1 ? `, ${idx.length} launches time-weighted` : ""})`,
    }),
    h("table", { class: "ks-kv" }, h("tbody", {}, rows)),
    h("p", {
      class: few ? "ks-note ks-warn" : "ks-note",
      text:
        `${med === null ? "No samples" : `${fmtInt(med)} sample${med === 1 ? "" : "s"} per launch (median)`}`
        + (few ? ": shorter than a few samples, so these values mix with what ran next to it." : ".")
        + " GPU-wide values: work on other streams at the same time counts too.",
    })
  );
}

/** Warp-stall shares of the selected kernel names (rep.stalls), with what each reason means. */
export function stallBlock(model, names) {
  const st = model.header.stalls;
  if (!st || !(st.rows || []).length) return null;
  const rows = st.rows.filter((r) => names.includes(r.name));
  if (!rows.length) return null;
  // Samples-weighted shares over the selected names.
  const tot = {};
  let w = 0;
  for (const r of rows) {
    const n = r.samples || 0;
    w += n;
    for (const [reason, s] of Object.entries(r.shares || {})) tot[reason] = (tot[reason] || 0) + s * n;
  }
  const shares = Object.entries(tot)
    .map(([r, v]) => [r, w > 0 ? v / w : 0])
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6);
  const reasons = st.reasons || {};
  const top = shares.length ? reasons[shares[0][0]] : null;
  const source = [...new Set(rows.map((r) => r.source))].join(", ");
  return h(
    "div",
    { class: "ks-detail-block ks-stalls" },
    h("h4", { text: `Warp stalls (${source}, ${fmtInt(w)} stall samples)` }),
    // Reasons by the one vocabulary's name (analysis/stalls.py), as Nsight Compute's deep dive,
    // the kernel table and the text name them; its words beside.
    h(
      "table",
      { class: "ks-kv" },
      h(
        "tbody",
        {},
        shares.map(([r, s]) =>
          h(
            "tr",
            { "data-reason": r, title: (reasons[r] || {}).meaning || null },
            h("th", { text: r }),
            h(
              "td",
              {},
              h("span", {
                class: "ks-bar",
                style: `width:${Math.max(1, Math.round(s * 100))}px;background:var(--ks-accent)`,
              }),
              ` ${(s * 100).toFixed(0)}% ${(reasons[r] || {}).title || ""}`
            )
          )
        )
      )
    ),
    top
      ? h("p", { class: "ks-note", text: `Most stalls: ${top.title} (${top.meaning}). Usually helps: ${top.fix}.` })
      : null
  );
}
