// The comparison view (ks.compare; payload: kernelscope/view/compare.py): the two runs by
// name, the overall change, the first run's advice re-measured, and every kernel with its time on
// each side (and the 95% interval of its change where the runs were repeated), sortable and
// filterable.
// Every number and word comes formatted from Python ("–" where a kernel did not run on a side);
// the raw numbers beside the text only order the rows.
import { h, useVocabulary, safeColor, classFrom } from "./format.js";

/** Render a decoded comparison view model into `el`; returns {root, setFilter, sortBy, rows}. */
export function renderCompare(el, model, _opts = {}) {
  const hd = model.header;
  useVocabulary(hd.vocabulary);
  el.textContent = "";
  const [lb, la] = hd.labels || ["before", "after"];
  const root = h("div", { class: "ks-root ks-compare", "data-kernelscope-version": String(hd.version) });
  el.append(root);
  root.append(
    h(
      "div",
      { class: "ks-title" },
      h("span", { class: "ks-brand", text: "kernelscope comparison" }),
      h("span", { class: "ks-compare-side", "data-side": "before", text: lb, title: lb }),
      h("span", { class: "ks-compare-arrow", text: "→" }),
      h("span", { class: "ks-compare-side", "data-side": "after", text: la, title: la }),
      hd.runs_note ? h("span", { class: "ks-note", text: ` (${hd.runs_note})` }) : null
    )
  );
  if (hd.warning) root.append(h("div", { class: "ks-compare-warning", role: "alert", text: hd.warning }));
  root.append(overallTable(hd, lb, la));
  const notes = [hd.noise_note, ...(hd.notes || []).filter((n) => n !== hd.warning)].filter(Boolean);
  if (notes.length)
    root.append(
      h(
        "ul",
        { class: "ks-notes" },
        notes.map((n) => h("li", { text: n }))
      )
    );
  const advice = adviceTable(hd);
  if (advice) root.append(advice);
  const table = new CompareTable(hd, lb, la);
  root.append(table.el, legend(hd), backendTable(hd, lb, la));
  return { root, table, setFilter: (q) => table.setFilter(q), sortBy: (k) => table.sortBy(k), setSelection() {} };
}

function overallTable(hd, lb, la) {
  return h(
    "table",
    { class: "ks-static-table ks-compare-overall" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { text: "" }),
        h("th", { class: "ks-num", text: lb, title: lb }),
        h("th", { class: "ks-num", text: la, title: la }),
        h("th", { class: "ks-num", text: "change" }),
        h("th", { class: "ks-num", text: "ratio" }),
        h("th", { text: hd.repeated ? "±95% · verdict" : "" })
      )
    ),
    h(
      "tbody",
      {},
      (hd.overall || []).map((r) =>
        h(
          "tr",
          { "data-metric": r.metric },
          h("td", { text: r.label }),
          h("td", { class: "ks-num", text: r.before_text }),
          h("td", { class: "ks-num", text: r.after_text }),
          h("td", { class: "ks-num", text: r.change_text }),
          h("td", { class: "ks-num", text: r.ratio_text }),
          h("td", { class: "ks-note", text: r.noise_text || "" })
        )
      )
    )
  );
}

// The first run's "what to fix first" items, each fixed / partly / not in the second run.
function adviceTable(hd) {
  const rows = hd.advice || [];
  if (!rows.length) return null;
  const verdicts = hd.advice_verdicts || {};
  const num = (text) => h("td", { class: "ks-num", text });
  return h(
    "div",
    { class: "ks-compare-advice" },
    h(
      "div",
      { class: "ks-compare-advice-head" },
      h("b", { text: hd.advice_title || "" }),
      hd.advice_head ? h("span", { class: "ks-note", text: ` (${hd.advice_head})` }) : null
    ),
    h(
      "table",
      { class: "ks-static-table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["#", "item", "measure", "predicted", "realized", "ratio", "now", "verdict", "note"].map((t) =>
            h("th", {
              class: ["#", "predicted", "realized", "ratio", "now"].includes(t) ? "ks-num" : "ks-left",
              text: t,
            })
          )
        )
      ),
      h(
        "tbody",
        {},
        rows.map((r) =>
          h(
            "tr",
            { "data-verdict": r.verdict },
            num(String(r.rank)),
            h("td", { class: "ks-left ks-cmp-advice-title", text: r.title, title: `${r.title} (${r.kind})` }),
            h("td", { class: "ks-left", text: r.measure }),
            num(r.predicted_text),
            num(r.realized_text),
            num(r.ratio_text),
            num(r.after_text),
            h("td", {
              class: `ks-left ks-cmp-verdict${classFrom(verdicts, r.verdict, "ks-cmp-")}`,
              text: r.verdict_text,
              title: verdicts[r.verdict] || null,
            }),
            h("td", { class: "ks-left ks-note", text: r.note })
          )
        )
      )
    )
  );
}

// Columns: how each sorts (its raw value) and what it shows (the text Python formatted).
function columns(lb, la, repeated) {
  const orNone = (v) => (v === null || v === undefined ? -Infinity : v);
  return [
    { key: "kernel", label: "Kernel", left: true, sort: (r) => r.short_name.toLowerCase() },
    { key: "backend", label: "Backend", left: true, sort: (r) => r.backend.toLowerCase() },
    {
      key: "launches",
      label: "Launches",
      title: `launches per run, ${lb} → ${la}`,
      sort: (r) => orNone(r.launches_after ?? r.launches_before),
      text: (r) => r.launches_text,
    },
    {
      key: "before",
      label: lb,
      title: `kernel time per run in ${lb} (CUPTI)`,
      sort: (r) => orNone(r.total_before_us),
      text: (r) => r.before_text,
    },
    {
      key: "after",
      label: la,
      title: `kernel time per run in ${la} (CUPTI)`,
      sort: (r) => orNone(r.total_after_us),
      text: (r) => r.after_text,
    },
    {
      key: "change",
      label: "Change",
      title: `${la} minus ${lb}`,
      sort: (r) => r.change_us,
      text: (r) => r.change_text,
    },
    repeated
      ? {
          key: "ci",
          label: "±95%",
          title: "half-width of the change's 95% interval (Welch's t, from the repeats)",
          sort: (r) => orNone(r.ci_high_us === null ? null : r.ci_high_us - r.ci_low_us),
          text: (r) => r.ci_text,
        }
      : null,
    { key: "ratio", label: "Ratio", title: `${la} / ${lb}`, sort: (r) => orNone(r.ratio), text: (r) => r.ratio_text },
    { key: "status", label: "Status", left: true, sort: (r) => r.status },
    { key: "bar", label: "faster ← → slower", nosort: true },
  ].filter(Boolean);
}

class CompareTable {
  constructor(hd, lb, la) {
    this.hd = hd;
    this.rows = hd.kernels || [];
    this.cols = columns(lb, la, !!hd.repeated);
    // null: the order Python sent (largest change first, either way).
    this.state = { sort: null, desc: true, filter: "", status: "" };
    const statuses = [...new Set(this.rows.map((r) => r.status))];
    this.filterInput = h("input", {
      class: "ks-filter",
      type: "search",
      placeholder: "filter kernels, backends…",
      "aria-label": "filter kernels",
    });
    this.filterInput.addEventListener("input", () => {
      this.state.filter = this.filterInput.value;
      this.refresh();
    });
    this.statusSelect = h(
      "select",
      { class: "ks-status-filter", "aria-label": "status" },
      h("option", { value: "", text: "every status" }),
      statuses.map((s) => h("option", { value: s, text: s, title: (hd.statuses || {})[s] || null }))
    );
    this.statusSelect.addEventListener("change", () => {
      this.state.status = this.statusSelect.value;
      this.refresh();
    });
    this.head = h(
      "tr",
      {},
      this.cols.map((c) => {
        const th = h("th", {
          class: `ks-cmp-h ${c.left ? "ks-left" : "ks-num"}`,
          "data-col": c.key,
          text: c.label,
          title: [c.title, c.nosort ? null : "click to sort"].filter(Boolean).join(" · ") || null,
        });
        if (!c.nosort) th.addEventListener("click", () => this.sortBy(c.key));
        return th;
      })
    );
    this.body = h("tbody", {});
    this.status = h("div", { class: "ks-table-status" });
    this.scale = Math.max(0, ...this.rows.map((r) => Math.abs(r.change_us || 0)));
    this.el = h(
      "div",
      { class: "ks-compare-kernels" },
      h("div", { class: "ks-toolbar" }, this.filterInput, this.statusSelect),
      h(
        "div",
        { class: "ks-compare-scroll" },
        h("table", { class: "ks-compare-table" }, h("thead", {}, this.head), this.body)
      ),
      this.status
    );
    this.refresh();
  }

  setFilter(q) {
    this.filterInput.value = q;
    this.state.filter = q;
    this.refresh();
  }

  sortBy(key) {
    if (this.state.sort === key) this.state.desc = !this.state.desc;
    else {
      this.state.sort = key;
      this.state.desc = !["kernel", "backend", "status"].includes(key);
    }
    this.refresh();
  }

  refresh() {
    const { sort, desc, filter, status } = this.state;
    const q = filter.trim().toLowerCase();
    let rows = this.rows.filter(
      (r) =>
        (!status || r.status === status)
        && (!q
          || r.short_name.toLowerCase().includes(q)
          || r.backend.toLowerCase().includes(q)
          || r.names.some((n) => n.toLowerCase().includes(q)))
    );
    const col = this.cols.find((c) => c.key === sort);
    if (col) {
      const sign = desc ? -1 : 1;
      rows = rows
        .map((r, i) => [col.sort(r), i, r])
        .sort((x, y) => (x[0] < y[0] ? -sign : x[0] > y[0] ? sign : x[1] - y[1]))
        .map((x) => x[2]);
    }
    for (const th of this.head.children) {
      const key = th.getAttribute("data-col");
      const c = this.cols.find((x) => x.key === key);
      th.textContent = c.label + (key === sort ? (desc ? " ▼" : " ▲") : "");
      th.setAttribute("aria-sort", key === sort ? (desc ? "descending" : "ascending") : "none");
    }
    this.body.textContent = "";
    const frag = document.createDocumentFragment();
    for (const r of rows) frag.append(this._row(r));
    this.body.append(frag);
    this.visible = rows;
    this.status.textContent = `${rows.length} of ${this.rows.length} kernels${q || status ? " (filtered)" : ""}`;
  }

  _row(r) {
    const hd = this.hd;
    const badge =
      r.match === "short_name+backend"
        ? h("span", { class: "ks-cmp-badge", text: "≈", title: (hd.matches || {})[r.match] || null })
        : null;
    const cells = this.cols.map((c) => {
      if (c.key === "kernel") {
        return h(
          "td",
          { class: "ks-left ks-cmp-name", title: r.names.join("\n") },
          r.short_name,
          badge ? " " : null,
          badge
        );
      }
      if (c.key === "backend") return h("td", { class: "ks-left", text: r.backend });
      if (c.key === "status") {
        return h("td", {
          class: `ks-left ks-cmp-status${classFrom(Object.keys(hd.statuses || {}).map(dash), dash(r.status), "ks-cmp-")}`,
          text: r.status,
          title:
            [(hd.statuses || {})[r.status], r.ci_text ? `95% interval of the change: ${r.ci_text}` : null]
              .filter(Boolean)
              .join("\n") || null,
        });
      }
      if (c.key === "bar") return h("td", {}, bar(r, this.scale, hd));
      const text = c.text(r);
      return h("td", { class: `ks-num${text === hd.absent ? " ks-absent" : ""}`, "data-col": c.key, text });
    });
    return h("tr", { "data-name": r.name, "data-status": r.status }, cells);
  }
}

/** A diverging bar: faster grows left of the centre line, slower right; noise stays grey, and
 * an inconclusive change is faint (Python names both: hd.quiet, hd.faint). */
// A status as a class name ("within noise" -> "within-noise").
const dash = (t) => String(t).replace(/\s+/g, "-");

function bar(r, scale, hd) {
  const colors = hd.bar_colors || {};
  const box = h("div", { class: "ks-cmp-bar" }, h("div", { class: "ks-cmp-mid" }));
  if (!scale || !Number.isFinite(r.change_us) || !r.change_us) return box;
  const w = Math.min(50, (Math.abs(r.change_us) / scale) * 50);
  const quiet = (hd.quiet || ["within noise", "same"]).includes(r.status);
  const color = quiet ? colors.neutral : r.change_us > 0 ? colors.slower : colors.faster;
  const faint = r.status === "inconclusive" && Number.isFinite(hd.faint) ? `;opacity:${hd.faint}` : "";
  box.append(
    h("div", {
      class: "ks-cmp-fill",
      style: `left:${r.change_us < 0 ? 50 - w : 50}%;width:${w}%;background:${safeColor(color)}${faint}`,
    })
  );
  return box;
}

function legend(hd) {
  const m = hd.matches || {};
  const s = hd.statuses || {};
  return h(
    "div",
    { class: "ks-compare-legend ks-note" },
    h("span", { class: "ks-cmp-badge", text: "≈" }),
    ` ${m["short_name+backend"] || ""}`,
    h("br"),
    `${hd.absent || "–"}: the kernel did not run on that side (new: ${s.new || ""}; gone: ${s.gone || ""}).`
  );
}

function backendTable(hd, lb, la) {
  const rows = hd.backends || [];
  if (!rows.length) return null;
  return h(
    "details",
    { class: "ks-compare-backends" },
    h("summary", { text: "By backend" }),
    h(
      "table",
      { class: "ks-static-table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { text: "backend" }),
          h("th", { class: "ks-num", text: lb }),
          h("th", { class: "ks-num", text: la }),
          h("th", { class: "ks-num", text: "change" }),
          h("th", { class: "ks-num", text: "ratio" })
        )
      ),
      h(
        "tbody",
        {},
        rows.map((r) =>
          h(
            "tr",
            {},
            h("td", { text: r.backend }),
            h("td", { class: "ks-num", text: r.before_text }),
            h("td", { class: "ks-num", text: r.after_text }),
            h("td", { class: "ks-num", text: r.change_text }),
            h("td", { class: "ks-num", text: r.ratio_text })
          )
        )
      )
    )
  );
}
