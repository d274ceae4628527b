// The report's list tabs: Backends (what ran on the GPUs per backend, and on the CPU per library:
// kernelscope/analysis/backends.py), CPU ops (host and GPU time per op, nested ops included:
// kernelscope/analysis/op_tree.py: op_summary) and Findings (each with its evidence in words:
// kernelscope/analysis/evidence.py); the payload's `backends`, `ops` and `findings`
// (kernelscope/view/report.py).
import { h, fmtUs, fmtPct, fmtInt, backendColor, sevClass } from "./format.js";
import { sortTable } from "./sorttable.js";

const swatch = (r) => [
  h("span", { class: "ks-swatch", style: `background:${backendColor(r.backend)}` }),
  r.backend ?? "-",
];

/** What ran on the GPUs per backend (kernel launches), and apart from it what ran on the CPU
 * per library (CPU ops, host time): CPU ops are not launches. */
export function backendTables(rows, stats, caps = {}) {
  const gpu = rows.filter((r) => r.gpu_time_us !== null && r.gpu_time_us !== undefined);
  const cpu = rows.filter((r) => (r.gpu_time_us === null || r.gpu_time_us === undefined) && r.cpu_time_us != null);
  const out = [];
  if (gpu.length)
    out.push(h("h4", { class: "ks-section", text: "GPU: kernel launches by backend" }), gpuTable(gpu, caps));
  if (cpu.length) {
    out.push(
      h("h4", { class: "ks-section", text: "CPU: ops by library" }),
      h("p", {
        class: "ks-note",
        text:
          `CPU ops by the library that served them (host time, nested ops counted in their parents too); `
          + `${fmtInt(stats.ops)} ops recorded. Their GPU work is in the table above.`,
      }),
      sortTable(
        cpu,
        [
          { key: "backend", label: "library", search: true, text: (r) => r.backend ?? "-", cell: swatch },
          {
            key: "launches",
            label: "CPU ops",
            num: true,
            title: "CPU ops the library served (not GPU launches)",
            text: (r) => fmtInt(r.launches),
          },
          {
            key: "cpu_time_us",
            label: "host time",
            num: true,
            title: "host time of those ops (recorded by the profiler)",
            text: (r) => fmtUs(r.cpu_time_us),
          },
        ],
        { sort: "cpu_time_us", cls: "ks-backends-cpu" }
      ).el
    );
  }
  return out;
}

function gpuTable(gpu, caps) {
  return sortTable(
    gpu,
    [
      { key: "device", label: "device", search: true },
      { key: "backend", label: "backend", search: true, text: (r) => r.backend ?? "-", cell: swatch },
      {
        key: "launches",
        label: "launches",
        num: true,
        title: "kernel launches, copies and memsets on the GPU",
        text: (r) => fmtInt(r.launches),
      },
      {
        key: "gpu_time_us",
        label: "GPU time",
        num: true,
        title: `sum of durations measured by ${caps.duration_source || "CUPTI"}`,
        text: (r) => fmtUs(r.gpu_time_us),
      },
      {
        key: "share",
        label: "share",
        num: true,
        title: "share of all GPU time: kernels, copies and memsets",
        text: (r) => fmtPct(r.share),
      },
      // Share of kernel time alone: the number the kernel table's backend groups show (Python's kernel_share).
      {
        key: "kernel_share",
        label: "of kernel time",
        num: true,
        title: "share of kernel time (copies and memsets left out), as the kernel table's backend groups",
        text: (r) => (r.kernel_share == null ? "-" : fmtPct(r.kernel_share)),
      },
    ],
    { sort: "gpu_time_us", cls: "ks-backends-gpu" }
  ).el;
}

export function opsTable(ops, stats, names) {
  if (!ops.length)
    return h("p", { class: "ks-empty", text: "No CPU ops recorded (a --lean recording holds GPU activity only)." });
  const max = Math.max(...ops.map((o) => o.total_us || 0)) || 1;
  const gpuMax = Math.max(...ops.map((o) => o.gpu_inclusive_us ?? o.gpu_us ?? 0)) || 1;
  const bar = (v, m, color) =>
    h("span", { class: "ks-bar", style: `width:${Math.max(1, Math.round((v / m) * 40))}px;background:${color}` });
  const incl = (o) => o.gpu_inclusive_us ?? o.gpu_us;
  const table = sortTable(
    ops,
    [
      { key: "name", label: "op", search: true, text: (o) => o.name ?? "-", tip: (o) => o.name ?? null },
      { key: "calls", label: "calls", num: true, text: (o) => fmtInt(o.calls) },
      {
        key: "total_us",
        label: "host time",
        num: true,
        title: "host time of every call, nested ops included (recorded by the profiler)",
        text: (o) => fmtUs(o.total_us),
        cell: (o) => [bar(o.total_us || 0, max, "var(--ks-accent)"), ` ${fmtUs(o.total_us)}`],
      },
      {
        key: "self_us",
        label: "host self",
        num: true,
        title: "host time outside the ops nested in it",
        text: (o) => fmtUs(o.self_us),
      },
      { key: "mean_us", label: "mean", num: true, title: "host time per call", text: (o) => fmtUs(o.mean_us) },
      {
        key: "kernels",
        label: "kernels",
        num: true,
        title: "kernels the op launched itself",
        text: (o) => fmtInt(o.kernels),
      },
      {
        key: "gpu_us",
        label: "GPU self",
        num: true,
        title: "GPU time (CUPTI) of the kernels the op launched itself",
        text: (o) => (o.kernels ? fmtUs(o.gpu_us) : "-"),
      },
      {
        key: "gpu_inclusive_us",
        label: "GPU total",
        num: true,
        value: incl,
        title:
          "GPU time (CUPTI) of the kernels the op and the ops nested in it launched (computed by kernelscope from the op tree)",
        text: (o) => (incl(o) ? fmtUs(incl(o)) : "-"),
        cell: (o) => (incl(o) ? [bar(incl(o), gpuMax, "var(--ks-fg2)"), ` ${fmtUs(incl(o))}`] : "-"),
      },
      {
        key: "kernels_inclusive",
        label: "kernels total",
        num: true,
        title: "kernels launched by the op and the ops nested in it",
        text: (o) => fmtInt(o.kernels_inclusive ?? o.kernels),
      },
    ],
    { filter: "filter ops…", sort: "total_us", cls: "ks-ops", empty: "No op matches." }
  );
  return h(
    "div",
    {},
    // Older payloads do not say how many names there are: then only what is shown is counted.
    h("p", {
      class: "ks-note",
      text:
        `Host time of torch ops: ${fmtInt(stats.ops)} calls of ${fmtInt(names ?? ops.length)} ops recorded`
        + `${names > ops.length ? `, the costliest ${fmtInt(ops.length)} shown` : ""}. `
        + "Host time counts nested ops in their parents too (host self does not); GPU self is the time of the kernels an op "
        + "launched itself, GPU total adds those of the ops nested in it (as TensorBoard's operator view).",
    }),
    table.el
  );
}

export function findingsList(findings) {
  if (!findings.length) return h("p", { class: "ks-empty", text: "No findings." });
  return h(
    "ol",
    { class: "ks-findings" },
    findings.map((f, i) => {
      const ev = Object.entries(f.evidence || {});
      // The evidence in words, each figure with its unit (formatted in Python: analysis/evidence.py);
      // older payloads carry the raw values only.
      const rows = f.evidence_text
        ? f.evidence_text
        : ev.map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]);
      return h(
        "li",
        { class: "ks-finding", "data-finding": String(i) },
        h(
          "div",
          {},
          h("span", { class: sevClass(f.severity), text: f.severity || "" }),
          " ",
          h("b", { text: f.title || "" }),
          f.kind ? h("span", { class: "ks-kind", text: ` ${f.kind}` }) : null
        ),
        f.detail ? h("div", { class: "ks-finding-detail", text: f.detail }) : null,
        rows.length
          ? h(
              "details",
              {},
              h("summary", { text: "evidence" }),
              h(
                "table",
                { class: "ks-static-table ks-evidence" },
                h(
                  "tbody",
                  {},
                  rows.map(([k, v]) => h("tr", {}, h("th", { text: k }), h("td", { text: v })))
                )
              )
            )
          : null
      );
    })
  );
}
