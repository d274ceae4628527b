// The report view shared by the anywidget and the JupyterLab MIME renderer / file viewer: the
// first screen (first_screen.js) over the tabs (Kernels: table.js and details.js; Timeline:
// timeline.js; CUDA graphs: graphs.js; Backends, CPU ops and Findings: lists.js; Roofline:
// charts.js), each drawn the first time it is shown, and the links between them (a kernel picked
// on the timeline is the table's selection, a finding's evidence opens the table or the timeline
// at it). The payload: kernelscope/view/report.py (view_model); a ranks or compare payload has
// its own view.
import { h, backendColor, useVocabulary } from "./format.js";
import { KernelTable } from "./table.js";
import { Timeline } from "./timeline.js";
import { UtilizationStrip } from "./utilization.js";
import { MemoryLane } from "./memory_lane.js";
import { backendChart, rooflineChart } from "./charts.js";
import { renderRanks } from "./ranks.js";
import { renderCompare } from "./compare.js";
import { windowChooser, windowHolds } from "./windows.js";
import { header, fixList } from "./first_screen.js";
import { backendTables, opsTable, findingsList } from "./lists.js";
import { renderDetails } from "./details.js";
import { graphsView, hasGraphs } from "./graphs.js";
import { stepsView, hasSteps } from "./steps.js";

// "CUDA graphs" shows only for a report that replayed a graph (graphs.js).
const GRAPHS = "CUDA graphs";
// "Steps" shows only for a report with ProfilerStep#N steps (steps.js).
const STEPS = "Steps";
const TABS = ["Kernels", "Timeline", STEPS, GRAPHS, "Backends", "CPU ops", "Roofline", "Findings"];

/**
 * Render a decoded view model into `el`.
 * opts.onSelect(names): called when the kernel selection changes (the widget syncs it to Python).
 * opts.fill: an element whose height the timeline's lanes fill (a JupyterLab file tab).
 * opts.trace: { fetch() -> Promise<{ name, bytes }> }, how this host reads the raw trace (perfetto.js).
 * opts.fetchWindow(from_us, until_us, kernel) -> Promise<model>: another window of a report too
 * big for one view (windows.js); the report is drawn again from it, on the tab shown.
 * Returns {setSelection(names), showTab(name), table, timeline}: the table and the timeline
 * exist once their tab has been shown (showTab draws it); their APIs are at the top of
 * table.js and timeline.js.
 */
export function renderReport(el, model, opts = {}) {
  // A multi-rank report (ks.load_ranks) has its own view; a rank opened from it is a report.
  if (model.header.kind === "ranks")
    return renderRanks(el, model, { ...opts, renderRank: (sub, m) => renderReport(sub, m) });
  // Two runs compared (ks.compare): its own view.
  if (model.header.kind === "compare") return renderCompare(el, model, opts);
  const t0 = performance.now();
  const hd = model.header;
  useVocabulary(hd.vocabulary);
  el.textContent = "";
  const root = h("div", { class: "ks-root", "data-kernelscope-version": String(hd.version) });
  el.append(root);
  const head = header(model);
  root.append(head);
  // The view's state, shared by the pieces below: `ctl` is what the caller gets.
  const v = { el, model, hd, opts, ctl: { table: null, timeline: null, details: null }, current: null };
  const tabs = makeTabs(v, root);
  linkSelection(v);
  // Before the evidence links: a link outside this window fetches its window through it.
  const chooser = windowSwitch(v);
  v.goToWindow = chooser && chooser.goTo;
  const { showEvidence, showFinding } = evidenceLinks(v);
  const list = head.querySelector(".ks-fixes-slot");
  if (list) list.replaceWith(fixList(hd, showEvidence, showFinding));
  if (chooser) head.append(chooser.el);
  const first = opts.openTab || hd.open_tab;
  v.select(tabs.includes(first) ? first : "Kernels");
  const ctl = v.ctl;
  ctl.showEvidence = showEvidence;
  ctl.setSelection = (names) => v.setSelected(names || [], false);
  ctl.showTab = (name) => {
    if (v.renderTab[name]) v.select(name);
    return ctl;
  };
  ctl.root = root;
  ctl.firstPaintMs = performance.now() - t0;
  root.setAttribute("data-render-ms", ctl.firstPaintMs.toFixed(1));
  return ctl;
}

/** The tab bar and a panel per tab this report can fill; `v.select(name)` shows one, drawing it
 * the first time. Returns the tabs' names. */
function makeTabs(v, root) {
  const { hd, ctl } = v;
  const panels = {};
  const tabButtons = {};
  const tabBar = h("div", { class: "ks-tabs", role: "tablist" });
  const rendered = new Set();
  v.panels = panels;
  v.renderTab = tabRenderers(v);
  v.select = (name) => {
    if (v.current !== name) {
      for (const [n, p] of Object.entries(panels)) p.style.display = n === name ? "" : "none";
      for (const [n, b] of Object.entries(tabButtons)) b.setAttribute("aria-selected", n === name ? "true" : "false");
      v.current = name;
    }
    if (!rendered.has(name)) {
      rendered.add(name);
      v.renderTab[name]();
    }
    if (name === "Timeline" && ctl.timeline) ctl.timeline.draw();
  };
  // The tabs this report can fill (an Nsight Compute replay has no timeline or CPU ops): from Python.
  const caps = hd.capabilities || {};
  const tabs = (caps.tabs ? TABS.filter((t) => caps.tabs.includes(t) || t === GRAPHS || t === STEPS) : TABS).filter(
    (t) => (t !== GRAPHS || hasGraphs(hd)) && (t !== STEPS || hasSteps(hd))
  );
  for (const name of tabs) {
    const label =
      name === "Findings"
        ? `Findings (${(hd.findings || []).length})`
        : name === GRAPHS
          ? `${hd.graphs.title} (${hd.graphs.rows.length})`
          : name;
    tabButtons[name] = h("button", {
      class: "ks-tab",
      role: "tab",
      "data-tab": name,
      text: label,
      onclick: () => v.select(name),
    });
    tabBar.append(tabButtons[name]);
    panels[name] = h("div", { class: "ks-panel", "data-panel": name, role: "tabpanel" });
  }
  root.append(tabBar, ...Object.values(panels));
  return tabs;
}

/** The kernel selection, one for the table, the details panel, the timeline and the caller:
 * `v.setSelected(names, fromUser)`; `v.detailOpts`, the details panel's options. */
function linkSelection(v) {
  const { model, opts, ctl } = v;
  const onSelect = opts.onSelect || (() => {});
  // A candidate's launches clicked in the Tuning block: the table narrowed to them, its kernel selected.
  v.detailOpts = {
    ...opts,
    showLaunches: (rows, label, name) => {
      v.select("Kernels");
      ctl.table.apply({ launches: rows, label });
      ctl.table.setSelection([name]);
      v.setSelected([name], true);
    },
  };
  v.setSelected = (names, fromUser) => {
    if (ctl.table && !fromUser) ctl.table.setSelection(names);
    renderDetails(ctl.details, model, names, v.detailOpts);
    // The table's selection shows on the timeline: those kernels' launches on top, the rest faded.
    if (ctl.timeline) ctl.timeline.highlight(names);
    ctl.selected = names;
    if (fromUser) onSelect(names);
  };
}

/** What each tab draws, the first time it is shown. */
function tabRenderers(v) {
  const { hd } = v;
  const caps = hd.capabilities || {};
  return {
    Kernels: () => kernelsTab(v),
    Timeline: () => timelineTab(v),
    Backends() {
      const b = hd.backends || [];
      if (!b.length) {
        v.panels.Backends.append(h("p", { class: "ks-empty", text: "No kernels recorded." }));
        return;
      }
      const chart = h("div", { class: "ks-chart" });
      v.panels.Backends.append(chart, ...backendTables(b, hd.stats || {}, caps));
      backendChart(chart, b, backendColor, caps.duration_source);
    },
    Roofline() {
      const roof = hd.roofline;
      if (!roof || !(roof.points || []).length) {
        v.panels.Roofline.append(
          h("p", {
            class: "ks-empty",
            text: "No roofline data: it needs FLOP and byte counts per kernel (record with FLOPs, or merge Nsight Compute metrics).",
          })
        );
        return;
      }
      const chart = h("div", { class: "ks-chart" });
      v.panels.Roofline.append(chart);
      if (roof.note) v.panels.Roofline.append(h("p", { class: "ks-note", text: roof.note }));
      rooflineChart(chart, roof, backendColor);
    },
    "CPU ops"() {
      v.panels["CPU ops"].append(opsTable(hd.ops || [], hd.stats || {}, hd.op_names));
    },
    Findings() {
      v.panels.Findings.append(findingsList(hd.findings || []));
    },
    [GRAPHS]: () => graphsTab(v),
    [STEPS]: () => v.panels[STEPS].append(stepsView(v.hd.steps, { width: v.panels[STEPS].clientWidth })),
  };
}

function kernelsTab(v) {
  const { model, opts, ctl } = v;
  ctl.table = new KernelTable(model, {
    onSelect: (names) => v.setSelected(names, true),
    height: opts.tableHeight || 360,
  });
  ctl.details = h("div", { class: "ks-details" });
  // A kernel picked on the timeline before this tab was drawn is selected here too.
  if (ctl.selected && ctl.selected.length) ctl.table.setSelection(ctl.selected);
  renderDetails(ctl.details, model, ctl.selected || [], v.detailOpts);
  v.panels.Kernels.append(ctl.table.el, ctl.details);
}

/** The CUDA graphs replayed: a graph's launches open in the kernel table, a node's kernel is
 * selected there (its details show its capture). */
function graphsTab(v) {
  const { ctl } = v;
  const showKernels = () => {
    v.select("Kernels");
    return ctl.table;
  };
  v.panels[GRAPHS].append(
    graphsView(v.model, {
      showLaunches: (rows, label) => showKernels().apply({ launches: rows, label }),
      selectKernel: (name) => {
        showKernels().setSelection([name]);
        v.setSelected([name], true);
        v.panels.Kernels.scrollIntoView({ block: "nearest" });
      },
    })
  );
}

function timelineTab(v) {
  const { model, opts, ctl } = v;
  // Hardware counters, when sampled, draw in a strip under the lanes on the same time axis.
  ctl.strip = v.hd.counters && model.tables.counters ? new UtilizationStrip(model) : null;
  // The allocator's memory, when recorded (profile_memory), in a lane under them too.
  ctl.memory = v.hd.memory && v.hd.memory.series ? new MemoryLane(model) : null;
  const under = [ctl.strip, ctl.memory].filter(Boolean);
  ctl.timeline = new Timeline(model, {
    // A kernel clicked on the timeline becomes the table's selection (and Python's).
    onPick: (name) => {
      const names = ctl.selected && ctl.selected.length === 1 && ctl.selected[0] === name ? [] : [name];
      if (ctl.table) ctl.table.setSelection(names);
      v.setSelected(names, true);
    },
    onRange: (launches, label) => {
      v.select("Kernels");
      ctl.table.apply({ launches, label });
    },
    onDraw: under.length
      ? (view, width) => {
          for (const u of under) u.sync(view, width);
        }
      : null,
    fill: opts.fill || null,
    trace: opts.trace || null,
  });
  v.panels.Timeline.append(ctl.timeline.el);
  if (ctl.selected && ctl.selected.length) ctl.timeline.highlight(ctl.selected);
  for (const u of under.reverse()) ctl.timeline.el.insertBefore(u.el, ctl.timeline.wrap.nextSibling);
}

/** The first screen's evidence links open the table narrowed to the kernels, or the timeline
 * at the range, that show a finding (the list and its links are computed in Python). */
function evidenceLinks(v) {
  const { model, ctl, panels } = v;
  const showFinding = (index) => {
    v.select("Findings");
    const li = panels.Findings.querySelector(`[data-finding="${index}"]`);
    if (!li) return;
    for (const d of li.querySelectorAll("details")) d.open = true;
    li.classList.add("ks-finding-shown");
    li.scrollIntoView({ block: "nearest" });
  };
  // fetched: this view is the window fetched for the link (never fetch again: a link wider than
  // one window shows what the window holds).
  const showEvidence = (link, index, fetched) => {
    const names =
      link && link.view === "kernels"
        ? (link.names || []).filter((n) => (model.tables.kernels.strings.name || []).includes(n))
        : [];
    if (link && link.view === "timeline" && Number.isFinite(link.start_us) && Number.isFinite(link.end_us)) {
      // What it marks (else the range) outside the window this view holds: fetch the window that
      // holds it, then zoom and mark there (a saved view with no kernel or file says so on the
      // chooser instead). Context around a mark inside the window is not worth a fetch.
      const marked = Number.isFinite(link.mark_start_us) && Number.isFinite(link.mark_end_us);
      const lo = marked ? link.mark_start_us : link.start_us;
      const hi = marked ? link.mark_end_us : link.end_us;
      if (v.goToWindow && !fetched && !windowHolds(v.hd.window, lo, hi)) {
        // From the range's start: the context before the mark comes too.
        v.goToWindow(Math.min(lo, link.start_us), hi, (next) => next.showEvidence(link, index, true));
        return;
      }
      v.select("Timeline");
      // Zoomed to it and marked: the span itself selected (older payloads: the range shown).
      ctl.timeline.view = [link.start_us, link.end_us];
      if (Number.isFinite(link.mark_start_us) && Number.isFinite(link.mark_end_us))
        ctl.timeline.select(link.mark_start_us, link.mark_end_us);
      else ctl.timeline.select(link.start_us, link.end_us);
      panels.Timeline.scrollIntoView({ block: "nearest" });
    } else if (names.length) {
      v.select("Kernels");
      // One kernel: the table filtered down to it; several: selected, the table unfiltered.
      if (typeof ctl.table.setFilter === "function") ctl.table.setFilter(names.length === 1 ? names[0] : "");
      ctl.table.setSelection(names);
      v.setSelected(names, true);
      panels.Kernels.scrollIntoView({ block: "nearest" });
    } else showFinding(index);
  };
  return { showEvidence, showFinding };
}

/** The window chooser of a report too big for one view (windows.js), or null. */
function windowSwitch(v) {
  const { el, opts, ctl } = v;
  return windowChooser(v.hd, {
    fetchWindow: opts.fetchWindow,
    selected: () => ctl.selected || [],
    // The new window replaces this view in place (the tab and the selection kept); callers
    // holding `ctl` keep a working one.
    onModel: (m, after) => {
      const keep = ctl.selected || [];
      Object.assign(ctl, renderReport(el, m, { ...opts, openTab: v.current }));
      if (keep.length) ctl.setSelection(keep);
      if (after) after(ctl);
    },
  });
}
