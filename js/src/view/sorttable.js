// A small sortable, filterable HTML table for the report's list panels (CPU ops, backends):
// click a header to sort (again to reverse), type to filter by the text columns. The kernel
// table (table.js) is its own, virtualised, component; these lists hold a few hundred rows, as
// the payload sends them (kernelscope/view/report.py: backends, ops; kernelscope/panels/tuning.py).
//
//   sortTable(rows, columns, { filter: "placeholder", sort: key, desc: true, cls, empty })
//   columns: [{ key, label, title, num (right-aligned, sorts descending first),
//               value(row) (sort key; default row[key]), text(row) (cell text), cell(row) (a node),
//               search: true (the filter matches this column's text) }]
// Returns { el, table, state, sortBy(key), setFilter(text), rows() (the rows shown) }.
import { h } from "./format.js";

const value = (c, r) => (c.value ? c.value(r) : r[c.key]);
const text = (c, r) => (c.text ? c.text(r) : String(r[c.key] ?? "-"));

/** The rows whose searchable columns' text holds the filter (any case), sorted by state.sort
 * (strings without case; a missing value sorts lowest). */
function visibleRows(rows, columns, state) {
  const q = state.filter.trim().toLowerCase();
  const shown = q
    ? rows.filter((r) => columns.some((c) => c.search && text(c, r).toLowerCase().includes(q)))
    : [...rows];
  const col = columns.find((c) => c.key === state.sort);
  if (col) {
    const sign = state.desc ? -1 : 1;
    shown.sort((a, b) => {
      let x = value(col, a),
        y = value(col, b);
      if (typeof x === "string" || typeof y === "string") {
        x = String(x ?? "").toLowerCase();
        y = String(y ?? "").toLowerCase();
      }
      x = x ?? -Infinity;
      y = y ?? -Infinity;
      return x < y ? -sign : x > y ? sign : 0;
    });
  }
  return shown;
}

/** The header cells say which column sorts, and which way. */
function markSorted(heads, columns, state) {
  heads.forEach((th, i) => {
    const c = columns[i];
    const on = c.key === state.sort;
    th.classList.toggle("ks-sorted", on);
    th.setAttribute("aria-sort", on ? (state.desc ? "descending" : "ascending") : "none");
    th.firstChild.textContent = c.label + (on ? (state.desc ? " ▼" : " ▲") : "");
  });
}

/** The body's rows: a cell per column (its `cell` node or its text), or a row saying none match. */
function fillBody(tbody, shown, columns, empty) {
  tbody.textContent = "";
  tbody.append(
    ...shown.map((r) =>
      h(
        "tr",
        {},
        columns.map((c) =>
          h("td", { class: c.num ? "ks-num" : null, title: c.tip ? c.tip(r) : null }, c.cell ? c.cell(r) : text(c, r))
        )
      )
    )
  );
  if (!shown.length)
    tbody.append(
      h("tr", {}, h("td", { colspan: String(columns.length), class: "ks-empty", text: empty || "No rows match." }))
    );
}

export function sortTable(rows, columns, o = {}) {
  const state = { sort: o.sort || null, desc: o.desc ?? true, filter: "" };
  const tbody = h("tbody", {});
  const heads = columns.map((c) => {
    const th = h(
      "th",
      {
        class: c.num ? "ks-num" : null,
        "data-col": c.key,
        title: c.title ? `${c.title} · click to sort` : "click to sort",
        "aria-sort": "none",
        role: "columnheader",
      },
      h("span", { class: "ks-h-label", text: c.label })
    );
    th.addEventListener("click", () => api.sortBy(c.key));
    return th;
  });
  const table = h(
    "table",
    { class: `ks-static-table ks-sortable${o.cls ? ` ${o.cls}` : ""}` },
    h("thead", {}, h("tr", {}, heads)),
    tbody
  );
  const status = h("span", { class: "ks-note ks-sort-status" });
  const input = o.filter
    ? h("input", { class: "ks-filter ks-list-filter", type: "search", placeholder: o.filter, "aria-label": o.filter })
    : null;
  if (input) input.addEventListener("input", () => api.setFilter(input.value));
  const el = h(
    "div",
    { class: "ks-sort-table" },
    input ? h("div", { class: "ks-toolbar" }, input, status) : null,
    table
  );
  let shown = rows;
  const render = () => {
    const q = state.filter.trim().toLowerCase();
    shown = visibleRows(rows, columns, state);
    markSorted(heads, columns, state);
    fillBody(tbody, shown, columns, o.empty);
    status.textContent = q ? `${shown.length} of ${rows.length} rows` : "";
  };
  const api = {
    el,
    table,
    state,
    sortBy(key) {
      const c = columns.find((x) => x.key === key);
      if (state.sort === key) state.desc = !state.desc;
      else {
        state.sort = key;
        state.desc = !!(c && c.num);
      }
      render();
    },
    setFilter(t) {
      state.filter = t || "";
      if (input) input.value = state.filter;
      render();
    },
    rows: () => shown,
  };
  render();
  return api;
}
