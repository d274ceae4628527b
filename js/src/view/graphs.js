// The "CUDA graphs" tab: each graph the recording replayed (its replays, kernels and time per
// replay, the capture's own cost, the share of its kernels given the op that captured them), the
// kernels of its first replay by node; and the "CUDA graph" fields of a replayed kernel in the
// kernel details and the timeline's properties pane. Every label, tooltip and cell text comes
// from the payload's `graphs` (kernelscope/panels/graphs.py); the per-launch fields are launch
// columns (kernelscope/view/report.py). Recorded text only ever goes in as text (h()).
import { h, fmtInt, fmtUs } from "./format.js";
import { str, int } from "./data.js";
import { sortTable } from "./sorttable.js";

/** Whether the report replayed a graph (the tab shows only then). */
export function hasGraphs(hd) {
  return !!(hd && hd.graphs && (hd.graphs.rows || []).length);
}

/** A launch column's value at row i: text, an int, or null. */
function field(k, key, i) {
  const codes = k.cols[key];
  if (!codes) return null;
  return k.strings[key] ? str(k, key, i) : int(k, key, i);
}

/** The per-kernel fields (label, tooltip) whose column the payload holds. */
function fieldsOf(model) {
  const g = model.header.graphs;
  const k = model.tables.kernels;
  return g ? (g.kernel_fields || []).filter((f) => k.cols[f.key]) : [];
}

/** The kernel rows of graph `key` (the kernels' `graph` value), in the view's kernel table. */
function graphRows(k, key) {
  const code = key === null || key === undefined ? -1 : (k.strings.graph || []).indexOf(key);
  const rows = [];
  if (code < 0) return rows;
  for (let i = 0; i < k.rows; i++) if (k.cols.graph[i] === code) rows.push(i);
  return rows;
}

/** The tab's content: the graphs table and, per graph, its first replay's kernels by node.
 * opts.showLaunches(rows, label): the kernel table narrowed to those launches;
 * opts.selectKernel(name): a kernel selected (its details show its capture). */
export function graphsView(model, opts = {}) {
  const g = model.header.graphs;
  const k = model.tables.kernels;
  const launches = new Map(g.rows.map((r) => [r, graphRows(k, r.kernels)]));
  const graphCell = (r) => {
    const rows = launches.get(r);
    return h(
      "span",
      {},
      r.text.graph,
      rows.length
        ? h("button", {
            class: "ks-link ks-graph-launches",
            text: ` (${fmtInt(rows.length)} launches)`,
            title: "show its launches in the kernel table",
            onclick: () => opts.showLaunches && opts.showLaunches(rows, `of ${r.graph}`),
          })
        : null
    );
  };
  const columns = g.columns.map((c) => ({
    key: c.key,
    label: c.label,
    title: c.tip,
    num: !!c.num,
    search: !c.num,
    text: (r) => (r.text || {})[c.key] ?? "-",
    cell: c.key === "graph" ? graphCell : undefined,
  }));
  const table = sortTable(g.rows, columns, { sort: "total_us", cls: "ks-graphs-table" });
  const el = h("div", { class: "ks-graphs" }, table.el);
  for (const r of g.rows) {
    const nodes = replayNodes(model, launches.get(r), opts);
    if (nodes) el.append(nodes(r));
  }
  return el;
}

/** The kernels of a graph's first replay in the view, by node: each a link to its details. */
function replayNodes(model, rows, opts) {
  const k = model.tables.kernels;
  if (!rows || !rows.length || !k.cols.graph_replay) return null;
  let first = Infinity;
  for (const i of rows) first = Math.min(first, int(k, "graph_replay", i) ?? Infinity);
  const one = rows.filter((i) => int(k, "graph_replay", i) === first);
  one.sort((a, b) => (int(k, "graph_node", a) ?? 1e9) - (int(k, "graph_node", b) ?? 1e9) || a - b);
  const labels = Object.fromEntries(fieldsOf(model).map((f) => [f.key, f]));
  const th = (key, fallback) =>
    h("th", { title: labels[key] ? labels[key].tip : null, text: labels[key] ? labels[key].label : fallback });
  return (r) =>
    h(
      "details",
      { class: "ks-graph-nodes", "data-graph": r.graph },
      h("summary", {
        text: `${r.graph}: ${labels.graph_replay ? labels.graph_replay.label : ""} ${first}, ${fmtInt(one.length)} kernels`,
      }),
      h(
        "table",
        { class: "ks-static-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            th("graph_node", "node"),
            h("th", { text: "kernel" }),
            h("th", { text: "CPU op" }),
            h("th", { class: "ks-num", text: "duration" }),
            th("capture_basis", "matched by")
          )
        ),
        h(
          "tbody",
          {},
          one.map((i) => {
            const name = str(k, "name", i);
            return h(
              "tr",
              { "data-row": String(i) },
              h("td", { class: "ks-num", text: field(k, "graph_node", i) ?? "-" }),
              h(
                "td",
                {},
                h("button", {
                  class: "ks-link ks-graph-kernel",
                  title: name,
                  text: model.header.names[k.cols.name[i]] || name,
                  onclick: () => opts.selectKernel && opts.selectKernel(name),
                })
              ),
              h("td", { text: str(k, "op", i) || "-" }),
              h("td", { class: "ks-num", text: fmtUs(k.cols.duration_us[i]) }),
              h("td", {
                text:
                  field(k, "capture_basis", i)
                  || (field(k, "graph_unmatched", i) ? `unmatched: ${field(k, "graph_unmatched", i)}` : "-"),
              })
            );
          })
        )
      )
    );
}

/** A replayed launch's fields as [label, value] (the value a text or an int); [] for a launch no
 * graph replayed. */
function launchFields(model, i) {
  const k = model.tables.kernels;
  return fieldsOf(model)
    .map((f) => [f.label, field(k, f.key, i)])
    .filter(([, v]) => v !== null && v !== "");
}

/** A replayed launch's fields as [label, text] rows (the timeline's properties pane). */
export function graphProperties(model, i) {
  return launchFields(model, i).map(([a, v]) => [a, String(v)]);
}

/** A replayed launch's fields on one line ("graph 3 · replay 2 · node 14 · matched by: …", or
 * "unmatched: …"), for the tooltip; "" for a launch no graph replayed. */
export function graphLine(model, i) {
  return launchFields(model, i)
    .map(([a, v], n) => (n === 0 && typeof v === "string" ? v : typeof v === "number" ? `${a} ${v}` : `${a}: ${v}`))
    .join(" · ");
}

/** The "CUDA graph" block of the selected launches' details: each field's value, or its values
 * with their counts where the launches differ; null when none of them was replayed. */
export function graphBlock(model, idx) {
  const k = model.tables.kernels;
  const rows = [];
  for (const f of fieldsOf(model)) {
    const counts = new Map();
    for (const i of idx) {
      const v = field(k, f.key, i);
      if (v !== null && v !== "") counts.set(v, (counts.get(v) || 0) + 1);
    }
    if (!counts.size) continue;
    const vals = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const text =
      vals.length === 1 && idx.length === vals[0][1]
        ? String(vals[0][0])
        : vals
            .slice(0, 6)
            .map(([v, n]) => `${v} ×${fmtInt(n)}`)
            .join(", ") + (vals.length > 6 ? `, … (${fmtInt(vals.length)} values)` : "");
    rows.push(h("tr", { "data-field": f.key }, h("th", { title: f.tip, text: f.label }), h("td", { text })));
  }
  if (!rows.length) return null;
  return h(
    "div",
    { class: "ks-detail-block ks-graph-fields" },
    h("h4", { text: model.header.graphs.title }),
    h("table", { class: "ks-kv" }, h("tbody", {}, rows))
  );
}
