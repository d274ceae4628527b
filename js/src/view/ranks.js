// The multi-rank view (ks.load_ranks; kernelscope/render/ranks.py): ranks as lanes on one
// clock (compute, communication and copy bands per rank, step starts marked, the slowest rank
// of each step flagged), stragglers, collectives, and the kernels of the rank picked in the
// selector. In the live widget the selector also opens that rank's full report below.
import { h, fmtUs, fmtPct, fmtInt, fmtBytes, fmtNum } from "./format.js";
import { str } from "./data.js";

const ROW_H = 18;
const LABEL_W = 86;
const AXIS_H = 20;
const TABS = ["Ranks", "Steps", "Collectives", "Kernels", "Findings"];

/** Render a decoded multi-rank view model into `el`. opts.requestRank(rank) -> Promise of a
 * decoded single-rank model (live widget only); opts.renderRank(el, model) draws it. */
export function renderRanks(el, model, opts = {}) {
  const hd = model.header;
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
    if (!drawn.has(name)) { drawn.add(name); render[name](); }
    if (name === "Ranks" && ctl.lanes) ctl.lanes.draw();
  };
  ctl.show = show;
  for (const name of TABS) {
    const label = name === "Findings" ? `Findings (${(hd.findings || []).length})` : name;
    buttons[name] = h("button", { class: "ks-tab", role: "tab", "data-tab": name, text: label, onclick: () => show(name) });
    tabBar.append(buttons[name]);
    panels[name] = h("div", { class: "ks-panel", "data-panel": name, role: "tabpanel" });
  }
  root.append(tabBar, ...Object.values(panels));

  const render = {
    Ranks() {
      ctl.lanes = new RankLanes(model, { onPick: (r) => { pick(r); show("Kernels"); } });
      panels.Ranks.append(ctl.lanes.el, rankTable(hd));
    },
    Steps() { panels.Steps.append(stepsTable(hd)); },
    Collectives() { panels.Collectives.append(commTable(hd)); },
    Kernels() { panels.Kernels.append(kernelsPanel(hd, state, opts)); },
    Findings() { panels.Findings.append(findingsList(hd.findings || [])); },
  };
  show("Ranks");
  return ctl;
}

function header(hd) {
  const tile = (label, value, title) => h("div", { class: "ks-tile", title },
    h("div", { class: "ks-tile-value", text: value }), h("div", { class: "ks-tile-label", text: label }));
  const ranks = hd.ranks || [];
  const strag = hd.stragglers || [];
  const counts = new Map();
  for (const s of strag) counts.set(s.slowest_rank, (counts.get(s.slowest_rank) || 0) + 1);
  const slow = [...counts.entries()].sort((a, b) => b[1] - a[1])[0];
  const lags = strag.map((s) => s.lag_us).sort((a, b) => a - b);
  const exposed = ranks.map((r) => r.exposed_comm_us).filter((v) => v != null).sort((a, b) => a - b);
  const median = (a) => (a.length ? a[Math.floor(a.length / 2)] : null);
  const backends = [...new Set(ranks.map((r) => r.backend).filter(Boolean))].join(", ");
  const top = (hd.findings || [])[0];
  return h("div", { class: "ks-header" },
    h("div", { class: "ks-title" }, h("span", { class: "ks-brand", text: "kernelscope" }),
      h("span", { class: "ks-source", text: `${ranks.length} ranks · world size ${hd.world_size}${backends ? ` · ${backends}` : ""}` })),
    h("div", { class: "ks-tiles" },
      tile("ranks", fmtInt(ranks.length)),
      tile("steps", fmtInt(ranks.length ? Math.max(...ranks.map((r) => r.steps || 0)) : 0), "steps marked (ProfilerStep#N)"),
      tile("slowest rank", slow ? `${slow[0]} (${slow[1]}/${strag.length})` : "-", "the rank with the most work in the most steps"),
      tile("median lag", fmtUs(median(lags)), hd.sources && hd.sources.lag_us),
      tile("exposed comm", fmtUs(median(exposed)), `${hd.sources && hd.sources.exposed_comm_us}; median over ranks`)),
    h("div", { class: "ks-top-finding" },
      top ? [h("span", { class: `ks-sev ks-sev-${top.severity}`, text: top.severity || "" }), " ", top.title] : "No findings."),
    (hd.notes || []).length ? h("ul", { class: "ks-notes" }, hd.notes.map((n) => h("li", { text: n }))) : null);
}

/** Ranks as lanes: per rank one row with a band per lane kind, on the common clock. */
export class RankLanes {
  constructor(model, { onPick } = {}) {
    this.model = model;
    this.onPick = onPick || (() => {});
    const hd = model.header;
    this.kinds = hd.lane_kinds || [];
    this.ranks = (hd.ranks || []).map((r) => r.rank);
    const t = model.tables.lanes;
    this.byRank = new Map(this.ranks.map((r) => [r, new Map(this.kinds.map((k) => [k.kind, []]))]));
    for (let i = 0; t && i < t.rows; i++) {
      const lane = this.byRank.get(t.cols.rank[i]);
      const kind = str(t, "kind", i);
      if (lane && lane.has(kind)) lane.get(kind).push([t.cols.start_us[i], t.cols.end_us[i]]);
    }
    this.steps = new Map();
    for (const s of hd.steps || []) {
      if (!this.steps.has(s.rank)) this.steps.set(s.rank, []);
      this.steps.get(s.rank).push(s);
    }
    this.slowest = new Map((hd.stragglers || []).map((s) => [s.step, s.slowest_rank]));
    const span = hd.span || [0, 1];
    const pad = (span[1] - span[0]) * 0.01 || 1;
    this.full = [span[0] - pad, span[1] + pad];
    this.view = [...this.full];
    this.canvas = h("canvas", { class: "ks-timeline-canvas ks-rank-lanes" });
    this.tip = h("div", { class: "ks-tip", style: "display:none" });
    const btn = (text, title, onclick) => h("button", { class: "ks-btn", text, title, onclick });
    this.info = h("span", { class: "ks-timeline-info" });
    this.el = h("div", { class: "ks-timeline ks-ranks-timeline" },
      h("div", { class: "ks-toolbar" }, btn("+", "zoom in", () => this.zoom(0.5)), btn("−", "zoom out", () => this.zoom(2)),
        btn("reset", "show everything", () => { this.view = [...this.full]; this.draw(); }), this.info,
        h("span", { class: "ks-hint", text: "wheel: zoom · drag: pan · click a rank: its kernels" })),
      h("div", { class: "ks-timeline-wrap" }, this.canvas, this.tip),
      h("div", { class: "ks-legend" }, this.kinds.map((k) => h("span", { class: "ks-legend-item", title: k.title },
        h("span", { class: "ks-swatch", style: `background:${k.color}` }), k.label)),
        " · step starts: ticks; the slowest rank of a step is marked ▲ (most work, least waiting)"));
    this._bind();
  }

  zoom(f, at) {
    const [a, b] = this.view;
    const c = at ?? (a + b) / 2;
    const w = Math.max((b - a) * f, 0.001);
    const r = (c - a) / (b - a || 1);
    this.view = [c - w * r, c - w * r + w];
    this.draw();
  }

  _x2t(x) { return this.view[0] + ((x - LABEL_W) / (this.width - LABEL_W)) * (this.view[1] - this.view[0]); }

  _bind() {
    const c = this.canvas;
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = c.getBoundingClientRect();
      this.zoom(e.deltaY > 0 ? 1.25 : 0.8, this._x2t(e.clientX - r.left));
    }, { passive: false });
    let drag = null;
    c.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, view: [...this.view], moved: false }; });
    window.addEventListener("mouseup", () => {
      if (drag && !drag.moved) this._click(drag);
      drag = null;
    });
    c.addEventListener("mousemove", (e) => {
      const r = c.getBoundingClientRect();
      if (drag) {
        const dx = e.clientX - drag.x;
        if (Math.abs(dx) > 2) drag.moved = true;
        const dt = (dx / (this.width - LABEL_W)) * (drag.view[1] - drag.view[0]);
        this.view = [drag.view[0] - dt, drag.view[1] - dt];
        this.draw();
        return;
      }
      this._hover(e.clientX - r.left, e.clientY - r.top);
    });
    c.addEventListener("mouseleave", () => { this.tip.style.display = "none"; });
    c.addEventListener("dblclick", () => { this.view = [...this.full]; this.draw(); });
  }

  _rankAt(y) {
    const i = Math.floor((y - AXIS_H) / ROW_H);
    return i >= 0 && i < this.ranks.length ? this.ranks[i] : null;
  }

  _click(drag) {
    const r = this.canvas.getBoundingClientRect();
    const rank = this._rankAt(drag.y - r.top);
    if (rank !== null) this.onPick(rank);
  }

  _hover(x, y) {
    const rank = this._rankAt(y);
    if (rank === null || x < LABEL_W) { this.tip.style.display = "none"; return; }
    const t = this._x2t(x);
    const row = (this.model.header.ranks || []).find((r) => r.rank === rank) || {};
    const step = (this.steps.get(rank) || []).find((s) => s.start_us <= t && t <= s.end_us);
    const lines = [`rank ${rank}${row.host ? ` on ${row.host}` : ""}${row.device ? ` (${row.device})` : ""}`, `at ${fmtUs(t)}`];
    if (step) {
      lines.push(`${step.step}: ${fmtUs(step.step_us)}; compute ${fmtUs(step.compute_us)}, communication ${fmtUs(step.comm_us)} `
        + `(exposed ${fmtUs(step.exposed_comm_us)})`);
      if (this.slowest.get(step.step) === rank) lines.push("the slowest rank of this step");
    }
    const lane = this.byRank.get(rank);
    for (const k of this.kinds) {
      const hit = (lane.get(k.kind) || []).find(([s, e]) => s <= t && t <= e);
      if (hit) lines.push(`${k.label}: ${fmtUs(hit[1] - hit[0])} from ${fmtUs(hit[0])}`);
    }
    this.tip.textContent = "";
    lines.forEach((l, i) => { if (i) this.tip.append(document.createElement("br")); this.tip.append(document.createTextNode(l)); });
    this.tip.style.display = "block";
    this.tip.style.left = `${Math.min(x + 12, this.width - 280)}px`;
    this.tip.style.top = `${y + 12}px`;
  }

  draw() {
    const c = this.canvas;
    const W = Math.max(300, (c.parentElement && c.parentElement.clientWidth) || 900);
    const H = AXIS_H + this.ranks.length * ROW_H + 4;
    const dpr = window.devicePixelRatio || 1;
    this.width = W;
    if (c.width !== W * dpr || c.height !== H * dpr) {
      c.width = W * dpr; c.height = H * dpr; c.style.width = `${W}px`; c.style.height = `${H}px`;
    }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(this.el);
    const fg = css.getPropertyValue("--ks-fg").trim() || "#333";
    const border = css.getPropertyValue("--ks-border").trim() || "#ddd";
    g.clearRect(0, 0, W, H);
    g.font = "11px var(--jp-ui-font-family, sans-serif)";
    const [a, b] = this.view;
    const plot = W - LABEL_W;
    const k = plot / (b - a);
    const X = (t) => LABEL_W + (t - a) * k;
    g.fillStyle = fg; g.strokeStyle = border;
    const tick = niceStep((b - a) / 8);
    for (let t = Math.ceil(a / tick) * tick; t <= b; t += tick) {
      const x = X(t);
      g.beginPath(); g.moveTo(x, AXIS_H - 4); g.lineTo(x, H); g.stroke();
      g.fillText(fmtUs(t), x + 2, 12);
    }
    const band = (ROW_H - 4) / Math.max(1, this.kinds.length);
    let drawn = 0;
    this.ranks.forEach((rank, i) => {
      const y = AXIS_H + i * ROW_H;
      const slowSteps = (this.steps.get(rank) || []).filter((s) => this.slowest.get(s.step) === rank).length;
      g.fillStyle = fg;
      g.fillText(`rank ${rank}${slowSteps ? " ▲" : ""}`, 4, y + 12);
      const lane = this.byRank.get(rank);
      this.kinds.forEach((kd, j) => {
        g.fillStyle = kd.color;
        let last = -1;
        for (const [s, e] of lane.get(kd.kind) || []) {
          if (e < a || s > b) continue;
          const x0 = Math.max(LABEL_W, X(s));
          const x1 = Math.min(W, X(e));
          if (Math.floor(x1) <= last) continue;   // sub-pixel: already covered
          g.fillRect(x0, y + 2 + j * band, Math.max(1, x1 - x0), Math.max(1, band - 1));
          last = Math.floor(Math.max(x1, x0 + 1));
          drawn++;
        }
      });
      g.fillStyle = fg;
      for (const s of this.steps.get(rank) || []) {
        if (s.start_us < a || s.start_us > b) continue;
        const x = X(s.start_us);
        g.fillRect(x, y, 1, ROW_H - 2);
        if (this.slowest.get(s.step) === rank) g.fillText("▲", x + 2, y + ROW_H - 4);
      }
    });
    g.fillStyle = border;
    g.fillRect(LABEL_W - 1, AXIS_H, 1, H);
    this.info.textContent = ` ${fmtUs(a)} – ${fmtUs(b)} (${fmtUs(b - a)})`;
    this.drawn = drawn;
  }
}

function niceStep(x) {
  const p = 10 ** Math.floor(Math.log10(x || 1));
  const m = x / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

function table(cols, rows, cls = "") {
  return h("table", { class: `ks-static-table ${cls}` },
    h("thead", {}, h("tr", {}, cols.map(([label, title]) => h("th", { text: label, title: title || null })))),
    h("tbody", {}, rows));
}

function td(text, num = true, title = null) { return h("td", { class: num ? "ks-num" : null, text, title }); }

function rankTable(hd) {
  const src = hd.sources || {};
  return table([["rank"], ["host"], ["device"], ["steps"], ["step", "median step time"], ["compute", src.compute_us],
    ["comm", src.comm_us], ["exposed", src.exposed_comm_us], ["hidden", "share of communication compute hides"],
    ["launches"], ["trace"]],
  (hd.ranks || []).map((r) => h("tr", { "data-rank": String(r.rank) }, td(String(r.rank)), td(r.host ?? "-", false),
    td(r.device ?? "-", false), td(fmtInt(r.steps)), td(fmtUs(r.step_us)), td(fmtUs(r.compute_us)), td(fmtUs(r.comm_us)),
    td(fmtUs(r.exposed_comm_us)), td(fmtPct(r.hidden_share, 0)), td(fmtInt(r.launches)),
    td((r.source || "-").split("/").pop(), false, r.source ?? null))), "ks-rank-table");
}

function stepsTable(hd) {
  const src = hd.sources || {};
  const s = hd.stragglers || [];
  if (!s.length) return h("p", { class: "ks-empty", text: "One rank only: no stragglers to find." });
  return h("div", {}, h("p", { class: "ks-note", text: "Per step, the rank with the most work (step time less exposed "
      + "communication) is the one the others wait for; its lag is its work less the median of the others'." }),
  table([["step"], ["slowest rank"], ["lag", src.lag_us], ["of step"], ["its compute"], ["median compute"], ["fastest rank"]],
    s.map((x) => h("tr", { "data-step": x.step }, td(x.step, false), td(String(x.slowest_rank)), td(fmtUs(x.lag_us)),
      td(fmtPct(x.lag_share, 0)), td(fmtUs(x.slowest_compute_us)), td(fmtUs(x.median_compute_us)), td(String(x.fastest_rank)))),
    "ks-stragglers"));
}

function commTable(hd) {
  const src = hd.sources || {};
  const c = hd.comm || [];
  if (!c.length) return h("p", { class: "ks-empty", text: "No collectives recorded." });
  const algo = (x) => [x.algorithm, x.protocol].filter((v) => v && v !== "-").join(" / ") || "-";
  const gbps = (v) => (v == null ? "-" : `${fmtNum(v, 2)} GB/s`);
  return table([["backend"], ["collective"], ["dtype"], ["algorithm", "from the NCCL kernel name"], ["calls", "per rank"],
    ["bytes / call"], ["time / rank"], ["bus bw", src.busbw_gbps], ["link", src.link_gbps], ["of link"], ["arrival skew", "median"]],
  c.map((x) => h("tr", {}, td(x.backend, false), td(x.kind, false), td(x.dtype, false), td(algo(x), false),
    td(fmtNum(x.calls, 0)), td(fmtBytes(x.bytes_per_call)), td(fmtUs(x.time_us)), td(gbps(x.busbw_gbps)),
    td(gbps(x.link_gbps)), td(fmtPct(x.busbw_of_link, 0)), td(fmtUs(x.skew_us)))), "ks-comm");
}

function kernelsPanel(hd, state, opts) {
  const el = h("div", { class: "ks-rank-kernels" });
  const select = h("select", { class: "ks-rank-select", "aria-label": "rank" },
    (hd.ranks || []).map((r) => h("option", { value: String(r.rank), text: `rank ${r.rank}` })));
  const body = h("div", {});
  const full = h("div", { class: "ks-rank-full" });
  const open = opts.requestRank ? h("button", { class: "ks-btn ks-open-rank", text: "open this rank's full report" }) : null;
  const draw = () => {
    if (state.rank !== null) select.value = String(state.rank);
    const rows = (hd.kernels || []).filter((k) => k.rank === state.rank);
    body.textContent = "";
    body.append(h("p", { class: "ks-note", text: `The ${hd.kernels_per_rank} costliest kernels of rank ${state.rank} `
      + "(durations measured by CUPTI; rep.summary() has them all)." }),
    table([["kernel"], ["backend"], ["launches"], ["total"], ["mean"], ["share"]],
      rows.map((k) => h("tr", {}, td(k.short_name ?? k.name, false, k.name), td(k.backend ?? "-", false),
        td(fmtInt(k.launches)), td(fmtUs(k.total_us)), td(fmtUs(k.mean_us)), td(fmtPct(k.share))))));
    full.textContent = "";
  };
  select.addEventListener("change", () => { state.rank = Number(select.value); draw(); });
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
  return h("ol", { class: "ks-findings" }, findings.map((f) => h("li", { class: "ks-finding" },
    h("div", {}, h("span", { class: `ks-sev ks-sev-${f.severity}`, text: f.severity || "" }), " ", h("b", { text: f.title || "" })),
    f.detail ? h("div", { class: "ks-finding-detail", text: f.detail }) : null)));
}
