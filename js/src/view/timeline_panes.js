// The DOM around the timeline's lanes (timeline.js): the selected range's bar (what ran in it,
// lanes.js: summarize, with its kernels and CPU ops as a sortable table), the properties pane of
// a clicked slice (its rows: slices.js) and the legend, whose colours are the payload's
// vocabulary (kernelscope/view/vocabulary.py).
import { h, fmtUs, fmtInt, fmtPct, backendColor, vocab, safeColor } from "./format.js";
import { sortTable } from "./sorttable.js";
import { hostColor, copyColor } from "./timeline_canvas.js";

export function plural(n, one, many = `${one}s`) {
  return `${fmtInt(n)} ${n === 1 ? one : many}`;
}

/** Fill `bar` with the selected range `sel` ({ t0, t1, summary }): its sums, and buttons to zoom
 * to it (`zoom()`), show its launches in the table (`onRange(launches, label)`) and `clear()` it. */
export function selectionBar(bar, sel, { onRange, zoom, clear }) {
  const s = sel.summary;
  bar.textContent = "";
  bar.style.display = "";
  const dev = s.devices.map((d) => `${d.device} busy ${fmtPct(d.share)}`).join(", ");
  bar.append(
    h("b", { class: "ks-sel-duration", text: fmtUs(s.duration) }),
    ` selected (${fmtUs(sel.t0)} – ${fmtUs(sel.t1)}): `,
    `${plural(s.launches.length, "kernel launch", "kernel launches")} of ${plural(s.kernels, "kernel")}, ${fmtUs(s.kernelTime)} of kernel time`,
    s.copies ? `, ${plural(s.copies, "copy", "copies")} (${fmtUs(s.copyTime)})` : "",
    dev ? ` · ${dev}` : "",
    s.idle > 0 ? ` · GPU idle ${fmtUs(s.idle)}` : "",
    s.top.length
      ? h(
          "span",
          { class: "ks-sel-top", title: "kernel time inside the range (CUPTI durations, clipped to it)" },
          " · most time: ",
          s.top.flatMap((t, n) => [n ? ", " : "", h("span", { title: t.name, text: t.short }), ` ${fmtUs(t.us)}`])
        )
      : "",
    " ",
    h("button", { class: "ks-btn ks-sel-zoom", text: "zoom to range", title: "F", onclick: zoom }),
    onRange && s.launches.length
      ? h("button", {
          class: "ks-btn ks-sel-table",
          text: "show these launches in the table",
          onclick: () => onRange(s.launches, `in ${fmtUs(sel.t0)} – ${fmtUs(sel.t1)}`),
        })
      : null,
    h("button", { class: "ks-btn ks-sel-clear", text: "clear", title: "Esc", onclick: clear })
  );
  if (s.rows.length) bar.append(rangeRows(s));
}

/** The kernels and CPU ops in a selected range, costliest first (sortable); the 100 costliest shown. */
function rangeRows(s) {
  const rows = [...s.rows].sort((a, b) => b.total - a.total);
  const shown = rows.slice(0, 100);
  return h(
    "details",
    { class: "ks-sel-summary", open: true },
    h("summary", {
      text:
        `${plural(s.kernels, "kernel")} and ${plural(rows.length - s.kernels, "CPU op")} in the range`
        + (rows.length > shown.length ? ` (the ${shown.length} costliest listed)` : ""),
    }),
    sortTable(
      shown,
      [
        { key: "short", label: "name", search: true, tip: (r) => r.name },
        { key: "kind", label: "kind", search: true },
        {
          key: "count",
          label: "count",
          num: true,
          title: "slices that overlap the range",
          text: (r) => fmtInt(r.count),
        },
        {
          key: "total",
          label: "total",
          num: true,
          title: "time inside the range (clipped to it)",
          text: (r) => fmtUs(r.total),
        },
        { key: "share", label: "share", num: true, title: "total / the range's length", text: (r) => fmtPct(r.share) },
      ],
      { sort: "total", cls: "ks-sel-rows" }
    ).el
  );
}

/** Fill `pane` with a slice's properties ({ title, rows }: slices.js), or hide it for null;
 * its close button calls `close()`. */
export function propertiesPane(pane, props, close) {
  pane.textContent = "";
  if (!props) {
    pane.style.display = "none";
    return;
  }
  pane.append(
    h(
      "div",
      { class: "ks-tl-pane-head" },
      h("b", { text: props.title }),
      h("button", { class: "ks-btn ks-tl-pane-close", text: "×", title: "close (Esc)", onclick: close })
    ),
    // Short fields side by side in columns; names, stacks and sources across the pane.
    h(
      "div",
      { class: "ks-tl-props" },
      props.rows
        .filter((r) => r[1] !== null && r[1] !== undefined && r[1] !== "")
        .map(([k, v]) =>
          h(
            "div",
            { class: `ks-tl-prop${String(v).length > 40 ? " ks-tl-wide" : ""}`, "data-prop": k },
            h("span", { class: "ks-tl-k", text: k }),
            h("span", { class: "ks-tl-v", text: v })
          )
        )
    )
  );
  pane.style.display = "";
}

export function legend(model) {
  const item = (color, label) =>
    h(
      "span",
      { class: "ks-legend-item" },
      h("span", { class: "ks-swatch", style: `background:${safeColor(color)}` }),
      label
    );
  const causes = Object.entries(vocab("causes")).filter(([, c]) => c.legend);
  // The backends this report's kernels ran on, each in its colour (the payload's vocabulary).
  const backends = [...new Set(model.tables.kernels.strings.backend || [])].sort();
  return h(
    "div",
    { class: "ks-legend" },
    "kernels: ",
    backends.map((b) => item(backendColor(b), b)),
    " · copies: ",
    Object.keys(vocab("copies")).map((k) => item(copyColor(k, k), k)),
    " · host: ",
    item(hostColor("op"), "CPU op"),
    item(hostColor("annotation"), "annotation"),
    item(hostColor("runtime"), "CUDA API"),
    item(hostColor("sync"), "synchronize"),
    " · GPU idle, waiting on: ",
    causes.map(([, c]) => item(c.color, c.legend))
  );
}
