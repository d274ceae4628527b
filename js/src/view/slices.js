// What a timeline slice says, with no DOM: the lines of its tooltip and the rows of its
// properties pane (Perfetto's / Nsight Systems' details panel), every field the payload holds for
// it: kernels, copies and host spans (kernelscope/view/report.py), idle gaps and their causes
// (kernelscope/analysis/timeline.py). `linked(it)` gives a launch's other end (lanes.js: linkedRows).
import { fmtUs, fmtBytes, fmtInt, fmtPct, fmtNum, vocab } from "./format.js";
import { str, int } from "./data.js";
import { dims } from "./table_stats.js";
import { callStack, sliceName } from "./lanes.js";
import { counterTracks, counterText } from "./measured.js";
import { graphProperties, graphLine } from "./graphs.js";

/** The properties pane of a slice ({ t, i }) or an idle gap ({ gap }): { title, rows: [[key, text]] }. */
export function sliceProperties(model, it, linked) {
  if (it.gap) return gapProperties(model, it.gap);
  const t = model.tables[it.t],
    i = it.i;
  const num = (c, f) => (t.cols[c] && !Number.isNaN(t.cols[c][i]) ? f(t.cols[c][i]) : null);
  const base = [
    ["start", fmtUs(t.cols.start_us[i])],
    ["duration", fmtUs(t.cols.duration_us[i])],
  ];
  if (it.t === "host") return hostProperties(model, it, linked(it), base, num);
  if (it.t === "copies") {
    return {
      title: str(t, "name", i) || "copy",
      rows: [
        ["kind", str(t, "kind", i)],
        ["direction", str(t, "copy_kind", i)],
        ["device / stream", `${str(t, "device", i) || "-"} / ${int(t, "stream", i) ?? "-"}`],
        ...base,
        ["bytes", num("bytes", fmtBytes)],
        ["bandwidth", num("bandwidth_gbps", (v) => `${fmtNum(v, 1)} GB/s`)],
        ["memory", [str(t, "src_memory", i), str(t, "dst_memory", i)].filter(Boolean).join(" → ") || null],
        ["CPU op", str(t, "op", i)],
      ],
    };
  }
  return kernelProperties(model, it, linked(it)[0], base, num);
}

function gapProperties(model, gap) {
  const gt = model.tables.gaps,
    i = gap.i,
    cause = str(gt, "cause", i);
  return {
    title: `GPU idle ${fmtUs(gap.e - gap.s)}`,
    rows: [
      ["device", str(gt, "device", i)],
      ["start", fmtUs(gap.s)],
      ["duration", fmtUs(gap.e - gap.s)],
      ["cause", (vocab("causes")[cause] || {}).text || cause],
      ["next op", str(gt, "after_op", i)],
      ["host blocked in", str(gt, "blocking_call", i)],
    ],
  };
}

function hostProperties(model, it, k, base, num) {
  const t = model.tables.host,
    i = it.i;
  const kt = model.tables.kernels;
  return {
    title: str(t, "name", i) || "?",
    rows: [
      ["kind", str(t, "kind", i)],
      ["thread", str(t, "tid", i)],
      ...base,
      ["depth", num("depth", String)],
      ["correlation id", num("correlation", (v) => (v > 0 ? String(v) : null))],
      [
        "launched",
        k.length
          ? `${model.header.names[kt.cols.name[k[0]]] || str(kt, "name", k[0])}${k.length > 1 ? ` and ${fmtInt(k.length - 1)} more` : ""}`
          : null,
      ],
      ["call stack", callStack(model, str(t, "tid", i), t.cols.start_us[i], i)],
    ],
  };
}

function kernelProperties(model, it, call, base, num) {
  const t = model.tables.kernels,
    ht = model.tables.host,
    i = it.i;
  const occ = num("theoretical_occupancy", (v) => v);
  const lim = str(t, "occupancy_limiter", i);
  return {
    title: sliceName(model, it),
    rows: [
      ["name", str(t, "name", i)],
      ["backend", str(t, "backend", i)],
      ["device / stream", `${str(t, "device", i) || "-"} / ${int(t, "stream", i) ?? "-"}`],
      ...base,
      ["grid", dims(t, "grid", i)],
      ["block", dims(t, "block", i)],
      [
        "registers / thread",
        int(t, "registers_per_thread", i) === null ? null : String(int(t, "registers_per_thread", i)),
      ],
      [
        "shared memory / block",
        int(t, "shared_mem_bytes", i) === null ? null : fmtBytes(int(t, "shared_mem_bytes", i)),
      ],
      ["theoretical occupancy", occ === null ? null : `${fmtPct(occ, 0)}${lim ? ` (limited by ${lim})` : ""}`],
      ["waves", num("waves", (v) => fmtNum(v, 2))],
      ["correlation id", num("correlation", (v) => (v > 0 ? String(v) : null))],
      [
        "launched by",
        call === undefined
          ? null
          : `${str(ht, "name", call)} at ${fmtUs(ht.cols.start_us[call])} (${fmtUs(t.cols.start_us[i] - ht.cols.start_us[call])} before the start)`,
      ],
      ["CPU op", str(t, "op", i)],
      ["call stack", call === undefined ? null : callStack(model, str(ht, "tid", call), ht.cols.start_us[call], call)],
      ["source", str(t, "source", i)],
      // A graph replay's kernel: the graph, replay and node, how it was matched to its capture.
      ...graphProperties(model, i),
      // PM-sampled counters, labelled as the payload names them (trace/counters.py: DERIVED).
      ...counterTracks(model).map((tr) => [
        tr.label,
        num(tr.column, (v) => counterText(tr, v, tr.unit === "%" ? 0 : 1)),
      ]),
      ["top stall", t.cols.top_stall ? str(t, "top_stall", i) : null],
    ],
  };
}

/** The tooltip of what lies under the pointer (lanes.js: hitAt), one string a line. */
export function tooltipLines(model, hit, linked) {
  if (hit.gap) return gapTip(model, hit.gap);
  const it = hit.item;
  const t = model.tables[it.t];
  const lines =
    it.t === "host"
      ? hostTip(model, it, linked(it))
      : it.t === "kernels"
        ? kernelTip(model, it, linked(it))
        : [
            str(t, "name", it.i) || "copy",
            `${fmtBytes(t.cols.bytes[it.i])} · ${fmtUs(t.cols.duration_us[it.i])} · ${fmtNum(t.cols.bandwidth_gbps[it.i], 1)} GB/s`,
          ];
  const pcts = counterTracks(model).filter((tr) => tr.unit === "%" && t.cols[tr.column]);
  if (pcts.length && pcts.some((tr) => !Number.isNaN(t.cols[tr.column][it.i]))) {
    lines.push(
      `PM sampling: ${pcts.map((tr) => `${tr.short} ${counterText(tr, t.cols[tr.column][it.i])}`).join(" · ")}`
    );
  }
  return lines;
}

function gapTip(model, gap) {
  const gt = model.tables.gaps;
  const cause = str(gt, "cause", gap.i);
  const after = str(gt, "after_op", gap.i);
  const call = str(gt, "blocking_call", gap.i);
  const lines = [
    `GPU idle ${fmtUs(gap.e - gap.s)} (${cause || "cause unknown"})`,
    `from ${fmtUs(gap.s)} to ${fmtUs(gap.e)}`,
  ];
  if (after) lines.push(`next: ${after}`);
  if (call) lines.push(`host blocked in ${call}`);
  return lines;
}

function hostTip(model, it, k) {
  const t = model.tables.host;
  const kind = str(t, "kind", it.i);
  const lines = [
    str(t, "name", it.i) || "?",
    `${fmtUs(t.cols.duration_us[it.i])} at ${fmtUs(t.cols.start_us[it.i])}`
      + (kind === "annotation" ? " · annotation (record_function)" : kind === "sync" ? " · the host waits here" : ""),
  ];
  if (k.length) {
    const kt = model.tables.kernels;
    lines.push(
      `launched: ${model.header.names[kt.cols.name[k[0]]] || str(kt, "name", k[0])}`
        + ` (${fmtUs(kt.cols.duration_us[k[0]])}, starts ${fmtUs(kt.cols.start_us[k[0]] - t.cols.start_us[it.i])} after the call)`
    );
  }
  return lines;
}

function kernelTip(model, it, r) {
  const t = model.tables.kernels;
  const lines = [
    sliceName(model, it),
    `${str(t, "backend", it.i) || "-"} · ${fmtUs(t.cols.duration_us[it.i])} at ${fmtUs(t.cols.start_us[it.i])}`,
    `op: ${str(t, "op", it.i) || "-"}`,
  ];
  const graph = graphLine(model, it.i);
  if (graph) lines.push(graph);
  if (r.length) {
    const ht = model.tables.host;
    lines.push(
      `launched by ${str(ht, "name", r[0])} at ${fmtUs(ht.cols.start_us[r[0]])}: `
        + `${fmtUs(t.cols.start_us[it.i] - ht.cols.start_us[r[0]])} from launch to start`
    );
  }
  return lines;
}
