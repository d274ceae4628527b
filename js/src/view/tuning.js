// The "Tuning" block of a kernel's details: what produced it, the knobs its launches ran with,
// and each autotuning of it (every candidate, fastest first, the winner marked). Everything it
// shows, column labels included, comes from the payload's `tuning` (kernelscope/panels/tuning.py).
import { h, fmtInt, fmtNum, fmtPct, fmtBytes } from "./format.js";
import { sortTable } from "./sorttable.js";

function cellText(key, v) {
  if (v === null || v === undefined) return "-";
  if (key === "theoretical_occupancy") return fmtPct(v, 1);
  if (key === "vs_best") return `${fmtNum(v, 2)}×`;
  if (key.endsWith("_ms")) return fmtNum(v, 4);
  if (key === "shared_mem_bytes") return v === 0 ? "0 B" : fmtBytes(v);
  if (typeof v === "number") return fmtInt(v);
  return String(v);
}

function columns(spec, extra = {}, cells = {}) {
  return spec.map(([key, label, title]) => ({
    key,
    label,
    title,
    num: !["config", "occupancy_limiter", "note", "config_source", "resources_source"].includes(key),
    search: key === "config",
    text: (r) => (extra[key] ? extra[key](r) : cellText(key, r[key])),
    cell: cells[key],
  }));
}

/** The tunings of the selected kernels: by kernel name, or (Inductor) by the CPU op they chose for
 * or the compiled kernel that runs their winner. */
function tuningsOf(t, names, ops) {
  return (t.tunings || []).filter(
    (x) =>
      names.includes(x.kernel)
      || (x.match_op && ops.has(x.match_op))
      || (x.match_kernels || []).some((n) => names.includes(n))
  );
}

/** tuningBlock(model, names, ops, { showLaunches(rows, label, kernel) }): a candidate's launch
 * count is a link to the launches that ran it (rows of the kernel table, from the payload). */
export function tuningBlock(model, names, ops, opts = {}) {
  const t = model.header.tuning;
  if (!t) return null;
  const known = names.map((n) => [n, (t.kernels || {})[n]]).filter(([, v]) => v);
  const tunings = tuningsOf(t, names, ops);
  if (!known.length && !tunings.length) return null;
  const block = h("div", { class: "ks-detail-block ks-tuning" }, h("h4", { text: "Tuning" }));
  for (const [name, v] of known) {
    const facts = [
      ["produced by", v.producer],
      ["fused ops", v.source_ops],
      ["kernel source", v.kernel_source],
      ["from its name", v.decoded],
      ...(v.facts || []),
    ].filter(([, x]) => x);
    block.append(
      h(
        "table",
        { class: "ks-kv" },
        h(
          "tbody",
          {},
          facts.map(([a, b]) => h("tr", {}, h("th", { text: a }), h("td", { text: b })))
        )
      )
    );
    const knobs = (v.knobs || []).filter((r) => r.config !== null || r.num_warps !== null || r.config_source !== null);
    if (knobs.length) {
      block.append(
        h("p", {
          class: "ks-note",
          text:
            names.length > 1
              ? `${name}: knobs of its launches`
              : "knobs of its launches"
                + (v.knob_sets > knobs.length ? ` (${knobs.length} of ${v.knob_sets} sets)` : ""),
        }),
        sortTable(knobs, columns(t.columns.knobs), { sort: "launches", desc: true, cls: "ks-knobs" }).el
      );
    }
  }
  for (const x of tunings) {
    const title = `${x.tuner}: ${x.kernel}${x.shape_key ? ` at ${x.shape_key}` : ""}`;
    const note =
      `${fmtInt(x.candidates)} candidates${x.shown < x.candidates ? `, the ${x.shown} fastest shown (rep.autotune has all)` : ""}`
      + (x.cached ? " · measured before this region (a cache hit)" : "");
    const launches = (r) =>
      r.launch_rows && r.launch_rows.length && opts.showLaunches
        ? h("button", {
            class: "ks-link ks-candidate-launches",
            text: cellText("launches", r.launches),
            title: `show the launches ${r.launch_label}`,
            onclick: () => opts.showLaunches(r.launch_rows, r.launch_label, x.kernel),
          })
        : cellText("launches", r.launches);
    const table = sortTable(
      x.rows,
      columns(
        t.columns.candidates,
        {
          config: (r) => `${r.winner ? "★ " : ""}${r.config ?? "-"}`,
        },
        { launches }
      ),
      { sort: "p50_ms", desc: false, cls: "ks-candidates", filter: x.rows.length > 8 ? "filter configs" : null }
    );
    table.table.setAttribute("data-tuning", String(x.tuning));
    block.append(
      h("p", { class: "ks-note ks-tuning-title", text: title }),
      h("p", { class: "ks-note", text: note }),
      table.el
    );
  }
  return block;
}
