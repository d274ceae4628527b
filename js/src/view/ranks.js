// The multi-rank view (ks.load_ranks; payload: kernelscope/view/ranks.py): ranks as lanes on one
// clock (compute, communication and copy bands per rank, step starts marked, the slowest rank
// of each step flagged), stragglers, collectives, and the kernels of the rank picked in the
// selector. In the live widget the selector also opens that rank's full report below.
import { h, fmtUs, fmtPct, fmtInt, fmtBytes, fmtNum, sevClass, useVocabulary } from "./format.js";
import { RankLanes } from "./rank_lanes.js";

const TABS = ["Ranks", "Steps", "Collectives", "Kernels", "Findings"];

/** Render a decoded multi-rank view model into `el`. opts.requestRank(rank) -> Promise of a
 * decoded single-rank model (live widget only); opts.renderRank(el, model) draws it. */
export function renderRanks(el, model, opts = {}) {
  const hd = model.header;
  useVocabulary(hd.vocabulary);
  el.textContent = "";
  const root = h("div", { class: "ks-root ks-ranks", "data-kernelscope-version": String(hd.version) });
  el.append(root);
  const ranks = hd.ranks || [];
  const state = { rank: ranks.length ? ranks[0].rank : null, listeners: [] };
  const pick = (r) => {
    state.rank = r;
    for (const f of state.listeners) f(r);
  };
  root.append(header(hd));
  const tabBar = h("div", { class: "ks-tabs", role: "tablist" });
  const panels = {};
  const buttons = {};
  const drawn = new Set();
  const ctl = { root, lanes: null, pick };
  const show = (name) => {
    for (const [n, p] of Object.entries(panels)) p.style.display = n === name ? "" : "none";
    for (const [n, b] of Object.entries(buttons)) b.setAttribute("aria-selected", n === name ? "true" : "false");
    if (!drawn.has(name)) {
      drawn.add(name);
      render[name]();
    }
    if (name === "Ranks" && ctl.lanes) ctl.lanes.draw();
  };
  ctl.show = show;
  for (const name of TABS) {
    const label = name === "Findings" ? `Findings (${(hd.findings || []).length})` : name;
    buttons[name] = h("button", {
      class: "ks-tab",
      role: "tab",
      "data-tab": name,
      text: label,
      onclick: () => show(name),
    });
    tabBar.append(buttons[name]);
    panels[name] = h("div", { class: "ks-panel", "data-panel": name, role: "tabpanel" });
  }
  root.append(tabBar, ...Object.values(panels));

  const render = {
    Ranks() {
      ctl.lanes = new RankLanes(model, {
        onPick: (r) => {
          pick(r);
          show("Kernels");
        },
      });
      panels.Ranks.append(ctl.lanes.el, rankTable(hd));
    },
    Steps() {
      panels.Steps.append(stepsTable(hd));
    },
    Collectives() {
      panels.Collectives.append(commTable(hd));
    },
    Kernels() {
      panels.Kernels.append(kernelsPanel(hd, state, opts));
    },
    Findings() {
      panels.Findings.append(findingsList(hd.findings || []));
    },
  };
  show("Ranks");
  return ctl;
}

function header(hd) {
  const tile = (label, value, title) =>
    h(
      "div",
      { class: "ks-tile", title },
      h("div", { class: "ks-tile-value", text: value }),
      h("div", { class: "ks-tile-label", text: label })
    );
  const ranks = hd.ranks || [];
  const strag = hd.stragglers || [];
  const counts = new Map();
  for (const s of strag) counts.set(s.slowest_rank, (counts.get(s.slowest_rank) || 0) + 1);
  const slow = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
  const lags = strag.map((s) => s.lag_us).sort((a, b) => a - b);
  const exposed = ranks
    .map((r) => r.exposed_comm_us)
    .filter((v) => v != null)
    .sort((a, b) => a - b);
  const median = (a) => (a.length ? a[Math.floor(a.length / 2)] : null);
  const backends = [...new Set(ranks.map((r) => r.backend).filter(Boolean))].join(", ");
  const top = (hd.findings || [])[0];
  return h(
    "div",
    { class: "ks-header" },
    h(
      "div",
      { class: "ks-title" },
      h("span", { class: "ks-brand", text: "kernelscope" }),
      h("span", {
        class: "ks-source",
        text: `${ranks.length} ranks · world size ${hd.world_size}${backends ? ` · ${backends}` : ""}`,
      })
    ),
    h(
      "div",
      { class: "ks-tiles" },
      tile("ranks", fmtInt(ranks.length)),
      tile(
        "steps",
        fmtInt(ranks.length ? Math.max(...ranks.map((r) => r.steps || 0)) : 0),
        "steps marked (ProfilerStep#N)"
      ),
      tile(
        "slowest rank",
        slow ? `${slow[0]} (${slow[1]}/${strag.length})` : "-",
        "the rank with the most work in the most steps"
      ),
      tile("median lag", fmtUs(median(lags)), hd.sources && hd.sources.lag_us),
      tile("exposed comm", fmtUs(median(exposed)), `${hd.sources && hd.sources.exposed_comm_us}; median over ranks`)
    ),
    h(
      "div",
      { class: "ks-top-finding" },
      top ? [h("span", { class: sevClass(top.severity), text: top.severity || "" }), " ", top.title] : "No findings."
    ),
    (hd.notes || []).length
      ? h(
          "ul",
          { class: "ks-notes" },
          hd.notes.map((n) => h("li", { text: n }))
        )
      : null
  );
}

function table(cols, rows, cls = "") {
  return h(
    "table",
    { class: `ks-static-table ${cls}` },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        cols.map(([label, title]) => h("th", { text: label, title: title || null }))
      )
    ),
    h("tbody", {}, rows)
  );
}

function td(text, num = true, title = null) {
  return h("td", { class: num ? "ks-num" : null, text, title });
}

function rankTable(hd) {
  const src = hd.sources || {};
  return table(
    [
      ["rank"],
      ["host"],
      ["device"],
      ["steps"],
      ["step", "median step time"],
      ["compute", src.compute_us],
      ["comm", src.comm_us],
      ["exposed", src.exposed_comm_us],
      ["hidden", "share of communication compute hides"],
      ["launches"],
      ["trace"],
    ],
    (hd.ranks || []).map((r) =>
      h(
        "tr",
        { "data-rank": String(r.rank) },
        td(String(r.rank)),
        td(r.host ?? "-", false),
        td(r.device ?? "-", false),
        td(fmtInt(r.steps)),
        td(fmtUs(r.step_us)),
        td(fmtUs(r.compute_us)),
        td(fmtUs(r.comm_us)),
        td(fmtUs(r.exposed_comm_us)),
        td(fmtPct(r.hidden_share, 0)),
        td(fmtInt(r.launches)),
        td((r.source || "-").split("/").pop(), false, r.source ?? null)
      )
    ),
    "ks-rank-table"
  );
}

function stepsTable(hd) {
  const src = hd.sources || {};
  const s = hd.stragglers || [];
  if (!s.length) return h("p", { class: "ks-empty", text: "One rank only: no stragglers to find." });
  return h(
    "div",
    {},
    h("p", {
      class: "ks-note",
      text:
        "Per step, the rank with the most work (step time less exposed "
        + "communication) is the one the others wait for; its lag is its work less the median of the others'.",
    }),
    table(
      [
        ["step"],
        ["slowest rank"],
        ["lag", src.lag_us],
        ["of step"],
        ["its compute"],
        ["median compute"],
        ["fastest rank"],
      ],
      s.map((x) =>
        h(
          "tr",
          { "data-step": x.step },
          td(x.step, false),
          td(String(x.slowest_rank)),
          td(fmtUs(x.lag_us)),
          td(fmtPct(x.lag_share, 0)),
          td(fmtUs(x.slowest_compute_us)),
          td(fmtUs(x.median_compute_us)),
          td(String(x.fastest_rank))
        )
      ),
      "ks-stragglers"
    )
  );
}

function commTable(hd) {
  const src = hd.sources || {};
  const c = hd.comm || [];
  if (!c.length) return h("p", { class: "ks-empty", text: "No collectives recorded." });
  const algo = (x) => [x.algorithm, x.protocol].filter((v) => v && v !== "-").join(" / ") || "-";
  const gbps = (v) => (v == null ? "-" : `${fmtNum(v, 2)} GB/s`);
  return table(
    [
      ["backend"],
      ["collective"],
      ["dtype"],
      ["algorithm", "from the NCCL kernel name"],
      ["calls", "per rank"],
      ["bytes / call"],
      ["time / rank"],
      ["bus bw", src.busbw_gbps],
      ["link", src.link_gbps],
      ["of link"],
      ["arrival skew", "median"],
    ],
    c.map((x) =>
      h(
        "tr",
        {},
        td(x.backend, false),
        td(x.kind, false),
        td(x.dtype, false),
        td(algo(x), false),
        td(fmtNum(x.calls, 0)),
        td(fmtBytes(x.bytes_per_call)),
        td(fmtUs(x.time_us)),
        td(gbps(x.busbw_gbps)),
        td(gbps(x.link_gbps)),
        td(fmtPct(x.busbw_of_link, 0)),
        td(fmtUs(x.skew_us))
      )
    ),
    "ks-comm"
  );
}

function kernelsPanel(hd, state, opts) {
  const el = h("div", { class: "ks-rank-kernels" });
  const select = h(
    "select",
    { class: "ks-rank-select", "aria-label": "rank" },
    (hd.ranks || []).map((r) => h("option", { value: String(r.rank), text: `rank ${r.rank}` }))
  );
  const body = h("div", {});
  const full = h("div", { class: "ks-rank-full" });
  const open = opts.requestRank
    ? h("button", { class: "ks-btn ks-open-rank", text: "open this rank's full report" })
    : null;
  const draw = () => {
    if (state.rank !== null) select.value = String(state.rank);
    const rows = (hd.kernels || []).filter((k) => k.rank === state.rank);
    body.textContent = "";
    body.append(
      h("p", {
        class: "ks-note",
        text:
          `The ${hd.kernels_per_rank} costliest kernels of rank ${state.rank} `
          + "(durations measured by CUPTI; rep.summary() has them all).",
      }),
      table(
        [["kernel"], ["backend"], ["launches"], ["total"], ["mean"], ["share"]],
        rows.map((k) =>
          h(
            "tr",
            {},
            td(k.short_name ?? k.name, false, k.name),
            td(k.backend ?? "-", false),
            td(fmtInt(k.launches)),
            td(fmtUs(k.total_us)),
            td(fmtUs(k.mean_us)),
            td(fmtPct(k.share))
          )
        )
      )
    );
    full.textContent = "";
  };
  select.addEventListener("change", () => {
    state.rank = Number(select.value);
    draw();
  });
  state.listeners.push(draw);
  if (open) {
    open.addEventListener("click", () => {
      const r = state.rank;
      full.textContent = `Opening rank ${r}…`;
      opts.requestRank(r).then((m) => {
        if (state.rank !== r) return;
        full.textContent = "";
        if (m && opts.renderRank) opts.renderRank(full, m);
        else full.textContent = `Rank ${r}'s report could not be opened.`;
      });
    });
  }
  el.append(h("div", { class: "ks-toolbar" }, select, open), body, full);
  draw();
  return el;
}

function findingsList(findings) {
  if (!findings.length) return h("p", { class: "ks-empty", text: "No findings." });
  return h(
    "ol",
    { class: "ks-findings" },
    findings.map((f) =>
      h(
        "li",
        { class: "ks-finding" },
        h(
          "div",
          {},
          h("span", { class: sevClass(f.severity), text: f.severity || "" }),
          " ",
          h("b", { text: f.title || "" })
        ),
        f.detail ? h("div", { class: "ks-finding-detail", text: f.detail }) : null
      )
    )
  );
}
