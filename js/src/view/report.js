// The report view shared by the anywidget and the JupyterLab MIME renderer / file viewer.
import { h, fmtUs, fmtPct, fmtInt, fmtBytes, fmtNum, backendColor, useVocabulary, vocab } from "./format.js";
import { str, int, num } from "./data.js";
import { KernelTable } from "./table.js";
import { launchesSummary, shapeCells } from "./table_stats.js";
import { Timeline } from "./timeline.js";
import { UtilizationStrip } from "./utilization.js";
import { counterBlock, stallBlock } from "./measured.js";
import { backendChart, occupancyChart, rooflineChart } from "./charts.js";
import { renderRanks } from "./ranks.js";
import { renderCompare } from "./compare.js";
import { kernelDetail } from "./kernel.js";
import { tuningBlock } from "./tuning.js";
import { sortTable } from "./sorttable.js";
import { copyText } from "./files.js";
import { windowChooser } from "./windows.js";

const TABS = ["Kernels", "Timeline", "Backends", "CPU ops", "Roofline", "Findings"];

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
  if (model.header.kind === "ranks") return renderRanks(el, model, { ...opts, renderRank: (sub, m) => renderReport(sub, m) });
  // Two runs compared (ks.compare): its own view.
  if (model.header.kind === "compare") return renderCompare(el, model, opts);
  const t0 = performance.now();
  const onSelect = opts.onSelect || (() => {});
  const hd = model.header;
  useVocabulary(hd.vocabulary);
  el.textContent = "";
  const root = h("div", { class: "ks-root", "data-kernelscope-version": String(hd.version) });
  el.append(root);
  const head = header(model);
  root.append(head);

  const panels = {};
  const tabButtons = {};
  const tabBar = h("div", { class: "ks-tabs", role: "tablist" });
  let current = null;
  const rendered = new Set();
  const select = (name) => {
    if (current !== name) {
      for (const [n, p] of Object.entries(panels)) p.style.display = n === name ? "" : "none";
      for (const [n, b] of Object.entries(tabButtons)) b.setAttribute("aria-selected", n === name ? "true" : "false");
      current = name;
    }
    if (!rendered.has(name)) { rendered.add(name); renderTab[name](); }
    if (name === "Timeline" && ctl.timeline) ctl.timeline.draw();
  };
  // The tabs this report can fill (an Nsight Compute replay has no timeline or CPU ops): from Python.
  const caps = hd.capabilities || {};
  const tabs = caps.tabs ? TABS.filter((t) => caps.tabs.includes(t)) : TABS;
  for (const name of tabs) {
    const label = name === "Findings" ? `Findings (${(hd.findings || []).length})` : name;
    tabButtons[name] = h("button", { class: "ks-tab", role: "tab", "data-tab": name, text: label, onclick: () => select(name) });
    tabBar.append(tabButtons[name]);
    panels[name] = h("div", { class: "ks-panel", "data-panel": name, role: "tabpanel" });
  }
  root.append(tabBar, ...Object.values(panels));

  const ctl = { table: null, timeline: null, details: null };
  // A candidate's launches clicked in the Tuning block: the table narrowed to them, its kernel selected.
  const detailOpts = { ...opts, showLaunches: (rows, label, name) => {
    select("Kernels");
    ctl.table.apply({ launches: rows, label });
    ctl.table.setSelection([name]);
    setSelected([name], true);
  } };
  const setSelected = (names, fromUser) => {
    if (ctl.table && !fromUser) ctl.table.setSelection(names);
    renderDetails(ctl.details, model, names, detailOpts);
    // The table's selection shows on the timeline: those kernels' launches on top, the rest faded.
    if (ctl.timeline) ctl.timeline.highlight(names);
    ctl.selected = names;
    if (fromUser) onSelect(names);
  };

  const renderTab = {
    Kernels() {
      ctl.table = new KernelTable(model, { onSelect: (names) => setSelected(names, true), height: opts.tableHeight || 360 });
      ctl.details = h("div", { class: "ks-details" });
      // A kernel picked on the timeline before this tab was drawn is selected here too.
      if (ctl.selected && ctl.selected.length) ctl.table.setSelection(ctl.selected);
      renderDetails(ctl.details, model, ctl.selected || [], detailOpts);
      panels.Kernels.append(ctl.table.el, ctl.details);
    },
    Timeline() {
      // Hardware counters, when sampled, draw in a strip under the lanes on the same time axis.
      ctl.strip = hd.counters && model.tables.counters ? new UtilizationStrip(model) : null;
      ctl.timeline = new Timeline(model, {
        // A kernel clicked on the timeline becomes the table's selection (and Python's).
        onPick: (name) => {
          const names = ctl.selected && ctl.selected.length === 1 && ctl.selected[0] === name ? [] : [name];
          if (ctl.table) ctl.table.setSelection(names);
          setSelected(names, true);
        },
        onRange: (launches, label) => {
          select("Kernels");
          ctl.table.apply({ launches, label });
        },
        onDraw: ctl.strip ? (view, width) => ctl.strip.sync(view, width) : null,
        fill: opts.fill || null, trace: opts.trace || null,
      });
      panels.Timeline.append(ctl.timeline.el);
      if (ctl.selected && ctl.selected.length) ctl.timeline.highlight(ctl.selected);
      if (ctl.strip) ctl.timeline.el.insertBefore(ctl.strip.el, ctl.timeline.wrap.nextSibling);
    },
    Backends() {
      const b = hd.backends || [];
      if (!b.length) { panels.Backends.append(h("p", { class: "ks-empty", text: "No kernels recorded." })); return; }
      const chart = h("div", { class: "ks-chart" });
      panels.Backends.append(chart, ...backendTables(b, hd.stats || {}, caps));
      backendChart(chart, b, backendColor, caps.duration_source);
    },
    Roofline() {
      const roof = hd.roofline;
      if (!roof || !(roof.points || []).length) {
        panels.Roofline.append(h("p", { class: "ks-empty",
          text: "No roofline data: it needs FLOP and byte counts per kernel (record with FLOPs, or merge Nsight Compute metrics)." }));
        return;
      }
      const chart = h("div", { class: "ks-chart" });
      panels.Roofline.append(chart);
      if (roof.note) panels.Roofline.append(h("p", { class: "ks-note", text: roof.note }));
      rooflineChart(chart, roof, backendColor);
    },
    "CPU ops"() {
      panels["CPU ops"].append(opsTable(hd.ops || [], hd.stats || {}, hd.op_names));
    },
    Findings() {
      panels.Findings.append(findingsList(hd.findings || []));
    },
  };
  // The first screen's evidence links open the table narrowed to the kernels, or the timeline
  // at the range, that show a finding (the list and its links are computed in Python).
  const showEvidence = (link, index) => {
    const names = link && link.view === "kernels" ? (link.names || []).filter((n) => (model.tables.kernels.strings.name || []).includes(n)) : [];
    if (link && link.view === "timeline" && Number.isFinite(link.start_us) && Number.isFinite(link.end_us)) {
      select("Timeline");
      // Zoomed to it and marked: the span itself selected (older payloads: the range shown).
      ctl.timeline.view = [link.start_us, link.end_us];
      if (Number.isFinite(link.mark_start_us) && Number.isFinite(link.mark_end_us)) ctl.timeline.select(link.mark_start_us, link.mark_end_us);
      else ctl.timeline.select(link.start_us, link.end_us);
      panels.Timeline.scrollIntoView({ block: "nearest" });
    } else if (names.length) {
      select("Kernels");
      // One kernel: the table filtered down to it; several: selected, the table unfiltered.
      if (typeof ctl.table.setFilter === "function") ctl.table.setFilter(names.length === 1 ? names[0] : "");
      ctl.table.setSelection(names);
      setSelected(names, true);
      panels.Kernels.scrollIntoView({ block: "nearest" });
    } else showFinding(index);
  };
  const showFinding = (index) => {
    select("Findings");
    const li = panels.Findings.querySelector(`[data-finding="${index}"]`);
    if (!li) return;
    for (const d of li.querySelectorAll("details")) d.open = true;
    li.classList.add("ks-finding-shown");
    li.scrollIntoView({ block: "nearest" });
  };
  const list = head.querySelector(".ks-fixes-slot");
  if (list) list.replaceWith(fixList(hd, showEvidence, showFinding));
  const chooser = windowChooser(hd, { fetchWindow: opts.fetchWindow, selected: () => ctl.selected || [],
    // The new window replaces this view in place (the tab and the selection kept); callers
    // holding `ctl` keep a working one.
    onModel: (m) => {
      const keep = ctl.selected || [];
      Object.assign(ctl, renderReport(el, m, { ...opts, openTab: current }));
      if (keep.length) ctl.setSelection(keep);
    } });
  if (chooser) head.append(chooser);
  const first = opts.openTab || hd.open_tab;
  select(tabs.includes(first) ? first : "Kernels");
  ctl.showEvidence = showEvidence;
  ctl.setSelection = (names) => setSelected(names || [], false);
  ctl.showTab = (name) => { if (renderTab[name]) select(name); return ctl; };
  ctl.root = root;
  ctl.firstPaintMs = performance.now() - t0;
  root.setAttribute("data-render-ms", ctl.firstPaintMs.toFixed(1));
  return ctl;
}

function header(model) {
  const hd = model.header;
  const s = hd.stats || {};
  const tile = (label, value, title, key) => shown(h("div", { class: "ks-tile", title, "data-tile": key || label },
    h("div", { class: "ks-tile-value", text: value }), h("div", { class: "ks-tile-label", text: label })));
  const devs = (hd.devices || []).map((d) => `${d.name} (sm_${d.compute_major}${d.compute_minor}, ${d.num_sms} SMs)`).join(", ");
  const clock = s.wall_clock ? ` · ${s.wall_clock}` : "";
  const memsets = s.memsets || 0;
  const caps = hd.capabilities || {};
  // Only the tiles this report can fill (caps.tiles, from Python); older payloads: all of them.
  const shown = (t) => (!caps.tiles || caps.tiles.includes(t.getAttribute("data-tile")) ? t : null);
  return h("div", { class: "ks-header" },
    h("div", { class: "ks-title" },
      h("span", { class: "ks-brand", text: "kernelscope" }),
      h("span", { class: "ks-source", text: hd.title || "", title: hd.title || "" }),
      hd.partial ? h("span", { class: "ks-badge ks-partial", text: "partial: the run stopped early" }) : null,
      devs ? h("span", { class: "ks-devices", text: devs }) : null),
    h("div", { class: "ks-tiles" },
      tile(`wall time${clock}`, fmtUs(s.wall_us), {
        "CUDA events": "region wall time, measured by CUDA events recorded around the region on the GPU's streams",
        "profiler span": "region wall time: the profiler's span, start to end of the trace (it also holds the profiler's start-up)",
        "first to last event": "region wall time: from the first to the last recorded event (the trace holds no span)",
      }[s.wall_clock] || "region wall time", "wall time"),
      tile("GPU busy", s.gpu_busy === null || s.gpu_busy === undefined ? "-" : fmtPct(s.gpu_busy), s.gpu_busy_note || ""),
      tile("kernel launches", fmtInt(s.launches),
        `kernel launches only${s.copies ? `; the ${fmtInt(s.copies - memsets)} copies and ${fmtInt(memsets)} memsets are counted apart` : ""}`),
      tile("kernels", fmtInt(s.kernels), "distinct kernel names"),
      tile("GPU kernel time", fmtUs(s.gpu_time_us), `sum of ${caps.durations || "kernel durations (CUPTI)"}`),
      tile("copies + memsets", fmtInt(s.copies),
        `${fmtInt(s.copies - memsets)} copies and ${fmtInt(memsets)} memsets${s.copy_time_us ? `, ${fmtUs(s.copy_time_us)} in all` : ""}`),
      tile("CPU ops", fmtInt(s.ops))),
    s.no_gpu ? h("div", { class: "ks-note ks-no-gpu", text: "No GPU found: this run recorded CPU ops only (see the CPU ops tab)." }) : null,
    h("div", { class: "ks-fixes-slot" }),
    (hd.notes || []).length ? h("ul", { class: "ks-notes" }, hd.notes.map((n) => h("li", { text: n }))) : null);
}

/** What ran on the GPUs per backend (kernel launches), and apart from it what ran on the CPU
 * per library (CPU ops, host time): CPU ops are not launches. */
function backendTables(rows, stats, caps = {}) {
  const gpu = rows.filter((r) => r.gpu_time_us !== null && r.gpu_time_us !== undefined);
  const cpu = rows.filter((r) => (r.gpu_time_us === null || r.gpu_time_us === undefined) && r.cpu_time_us != null);
  const swatch = (r) => [h("span", { class: "ks-swatch", style: `background:${backendColor(r.backend)}` }), r.backend ?? "-"];
  const out = [];
  if (gpu.length) {
    out.push(h("h4", { class: "ks-section", text: "GPU: kernel launches by backend" }), sortTable(gpu, [
      { key: "device", label: "device", search: true },
      { key: "backend", label: "backend", search: true, text: (r) => r.backend ?? "-", cell: swatch },
      { key: "launches", label: "launches", num: true, title: "kernel launches, copies and memsets on the GPU", text: (r) => fmtInt(r.launches) },
      { key: "gpu_time_us", label: "GPU time", num: true, title: `sum of durations measured by ${caps.duration_source || "CUPTI"}`, text: (r) => fmtUs(r.gpu_time_us) },
      { key: "share", label: "share", num: true, title: "share of all GPU time: kernels, copies and memsets", text: (r) => fmtPct(r.share) },
      // Share of kernel time alone: the number the kernel table's backend groups show (Python's kernel_share).
      { key: "kernel_share", label: "of kernel time", num: true, title: "share of kernel time (copies and memsets left out), as the kernel table's backend groups",
        text: (r) => (r.kernel_share == null ? "-" : fmtPct(r.kernel_share)) },
    ], { sort: "gpu_time_us", cls: "ks-backends-gpu" }).el);
  }
  if (cpu.length) {
    out.push(h("h4", { class: "ks-section", text: "CPU: ops by library" }),
      h("p", { class: "ks-note", text: `CPU ops by the library that served them (host time, nested ops counted in their parents too); `
        + `${fmtInt(stats.ops)} ops recorded. Their GPU work is in the table above.` }),
      sortTable(cpu, [
        { key: "backend", label: "library", search: true, text: (r) => r.backend ?? "-", cell: swatch },
        { key: "launches", label: "CPU ops", num: true, title: "CPU ops the library served (not GPU launches)", text: (r) => fmtInt(r.launches) },
        { key: "cpu_time_us", label: "host time", num: true, title: "host time of those ops (recorded by the profiler)", text: (r) => fmtUs(r.cpu_time_us) },
      ], { sort: "cpu_time_us", cls: "ks-backends-cpu" }).el);
  }
  return out;
}

function opsTable(ops, stats, names) {
  if (!ops.length) return h("p", { class: "ks-empty", text: "No CPU ops recorded (a --lean recording holds GPU activity only)." });
  const max = Math.max(...ops.map((o) => o.total_us || 0)) || 1;
  const gpuMax = Math.max(...ops.map((o) => o.gpu_inclusive_us ?? o.gpu_us ?? 0)) || 1;
  const bar = (v, m, color) => h("span", { class: "ks-bar", style: `width:${Math.max(1, Math.round((v / m) * 40))}px;background:${color}` });
  const incl = (o) => o.gpu_inclusive_us ?? o.gpu_us;
  const table = sortTable(ops, [
    { key: "name", label: "op", search: true, text: (o) => o.name ?? "-", tip: (o) => o.name ?? null },
    { key: "calls", label: "calls", num: true, text: (o) => fmtInt(o.calls) },
    { key: "total_us", label: "host time", num: true, title: "host time of every call, nested ops included (recorded by the profiler)",
      text: (o) => fmtUs(o.total_us), cell: (o) => [bar(o.total_us || 0, max, "var(--ks-accent)"), ` ${fmtUs(o.total_us)}`] },
    { key: "self_us", label: "host self", num: true, title: "host time outside the ops nested in it", text: (o) => fmtUs(o.self_us) },
    { key: "mean_us", label: "mean", num: true, title: "host time per call", text: (o) => fmtUs(o.mean_us) },
    { key: "kernels", label: "kernels", num: true, title: "kernels the op launched itself", text: (o) => fmtInt(o.kernels) },
    { key: "gpu_us", label: "GPU self", num: true, title: "GPU time (CUPTI) of the kernels the op launched itself",
      text: (o) => (o.kernels ? fmtUs(o.gpu_us) : "-") },
    { key: "gpu_inclusive_us", label: "GPU total", num: true, value: incl,
      title: "GPU time (CUPTI) of the kernels the op and the ops nested in it launched (computed by kernelscope from the op tree)",
      text: (o) => (incl(o) ? fmtUs(incl(o)) : "-"),
      cell: (o) => (incl(o) ? [bar(incl(o), gpuMax, "var(--ks-fg2)"), ` ${fmtUs(incl(o))}`] : "-") },
    { key: "kernels_inclusive", label: "kernels total", num: true, title: "kernels launched by the op and the ops nested in it",
      text: (o) => fmtInt(o.kernels_inclusive ?? o.kernels) },
  ], { filter: "filter ops…", sort: "total_us", cls: "ks-ops", empty: "No op matches." });
  return h("div", {},
    // Older payloads do not say how many names there are: then only what is shown is counted.
    h("p", { class: "ks-note", text: `Host time of torch ops: ${fmtInt(stats.ops)} calls of ${fmtInt(names ?? ops.length)} ops recorded`
      + `${names > ops.length ? `, the costliest ${fmtInt(ops.length)} shown` : ""}. `
      + "Host time counts nested ops in their parents too (host self does not); GPU self is the time of the kernels an op "
      + "launched itself, GPU total adds those of the ops nested in it (as TensorBoard's operator view)." }),
    table.el);
}

/** The first screen: what to fix first, ranked by the time at stake (from the payload's "fixes"). */
function fixList(hd, showEvidence, showFinding) {
  const fixes = hd.fixes || [];
  const all = (hd.findings || []).length;
  if (!fixes.length) {
    // A payload from before the list travelled: its top finding, as it was shown then.
    const top = (hd.findings || [])[0];
    return h("div", { class: "ks-fixes ks-fixes-none" },
      top ? [h("span", { class: `ks-sev ks-sev-${top.severity}`, text: top.severity || "" }), " ", top.title] : "No findings.");
  }
  const timed = fixes.some((f) => f.cost_us != null);
  return h("div", { class: "ks-fixes" },
    h("div", { class: "ks-fixes-head" },
      h("b", { text: timed ? "What to fix first" : "What the run says" }),
      timed ? h("span", { class: "ks-note", text: ` · time at stake: GPU time the cause costs (computed by kernelscope from the trace), and its share of the ${(hd.capabilities || {}).share_of || "wall time"}` }) : null,
      all > fixes.length ? h("a", { class: "ks-fixes-all", href: "#", text: ` · all ${all} findings`,
        onclick: (e) => { e.preventDefault(); showFinding(-1); } }) : null),
    h("ol", { class: "ks-fix-list" }, fixes.map((f) => h("li", { class: "ks-fix", "data-kind": f.kind || "" },
      h("div", { class: "ks-fix-head" },
        h("span", { class: `ks-sev ks-sev-${f.severity}`, text: f.severity || "" }),
        f.cost_text ? h("span", { class: "ks-fix-cost", text: f.cost_text }) : null,
        f.share_text ? h("span", { class: "ks-fix-share", text: f.share_text }) : null,
        h("span", { class: "ks-fix-title", text: f.title || "" })),
      f.cause ? h("div", { class: "ks-fix-line ks-fix-cause" }, h("span", { class: "ks-fix-label", text: "Cause" }), f.cause) : null,
      f.fix ? h("div", { class: "ks-fix-line ks-fix-fix" }, h("span", { class: "ks-fix-label", text: "Fix" }), f.fix) : null,
      f.note ? h("div", { class: "ks-fix-line ks-fix-note" }, h("span", { class: "ks-fix-label", text: "Note" }), f.note) : null,
      h("div", { class: "ks-fix-links" },
        f.link ? h("a", { class: "ks-fix-evidence", href: "#", "data-view": f.link.view || "", text: `${f.link.label || "evidence"} →`,
          onclick: (e) => { e.preventDefault(); showEvidence(f.link, f.finding); } }) : null,
        f.link ? " · " : null,
        h("a", { class: "ks-fix-more", href: "#", text: "the finding in full",
          onclick: (e) => { e.preventDefault(); showFinding(f.finding); } }))))));
}

function findingsList(findings) {
  if (!findings.length) return h("p", { class: "ks-empty", text: "No findings." });
  return h("ol", { class: "ks-findings" }, findings.map((f, i) => {
    const ev = Object.entries(f.evidence || {});
    // The evidence in words, each figure with its unit (formatted in Python: analysis/evidence.py);
    // older payloads carry the raw values only.
    const rows = f.evidence_text ? f.evidence_text
      : ev.map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]);
    return h("li", { class: "ks-finding", "data-finding": String(i) },
      h("div", {}, h("span", { class: `ks-sev ks-sev-${f.severity}`, text: f.severity || "" }), " ",
        h("b", { text: f.title || "" }), f.kind ? h("span", { class: "ks-kind", text: ` ${f.kind}` }) : null),
      f.detail ? h("div", { class: "ks-finding-detail", text: f.detail }) : null,
      rows.length ? h("details", {}, h("summary", { text: "evidence" }),
        h("table", { class: "ks-static-table ks-evidence" }, h("tbody", {}, rows.map(([k, v]) =>
          h("tr", {}, h("th", { text: k }), h("td", { text: v })))))) : null);
  }));
}

/** Details of the selected kernel(s): launches, op, source, occupancy breakdown and curves. */
function renderDetails(el, model, names, opts = {}) {
  if (!el) return;
  el.textContent = "";
  if (!names.length) {
    el.append(h("p", { class: "ks-empty", text: "Select a kernel row to see its launches, CPU op, source line and occupancy." }));
    return;
  }
  const k = model.tables.kernels;
  const nameStrings = k.strings.name;
  const wanted = new Set(names.map((n) => nameStrings.indexOf(n)));
  const idx = [];
  for (let i = 0; i < k.rows; i++) if (wanted.has(k.cols.name[i])) idx.push(i);
  if (!idx.length) return;
  const f = idx[0];
  let total = 0, min = Infinity, max = -Infinity;
  const ops = new Map(), sources = new Set();
  for (const i of idx) {
    const d = k.cols.duration_us[i];
    total += d; min = Math.min(min, d); max = Math.max(max, d);
    const op = str(k, "op", i) || "(no CPU op)";
    ops.set(op, (ops.get(op) || 0) + 1);
    const src = str(k, "source", i);
    if (src) sources.add(src);
  }
  const nameCode = k.cols.name[f];
  // Launch shape over every selected launch: a range or "mixed" where they differ.
  const shape = shapeCells(model, launchesSummary(model, idx));
  const fullName = names.length > 1 ? names.join("\n") : names[0];
  const copyBtn = h("button", { class: "ks-btn ks-copy-name", text: "copy name", title: "copy the full name as recorded",
    onclick: async () => { copyBtn.textContent = (await copyText(fullName)) ? "copied" : "copy failed"; setTimeout(() => { copyBtn.textContent = "copy name"; }, 1500); } });
  const kv = (rows) => h("table", { class: "ks-kv" }, h("tbody", {}, rows.filter((r) => r && r[1] !== null).map(([a, b]) =>
    h("tr", {}, h("th", { text: a }), h("td", { text: b ?? "-" })))));
  const info = h("div", { class: "ks-detail-block" },
    h("h4", { text: names.length > 1 ? `${names.length} kernels selected` : (model.header.names[nameCode] || names[0]) }),
    h("div", { class: "ks-fullname-row" }, h("div", { class: "ks-fullname", text: fullName }), copyBtn),
    kv([
      ["what it is", ((model.header.name_notes || [])[nameCode] || {}).about || null],
      ["backend", str(k, "backend", f)],
      ["why this backend", ((model.header.name_notes || [])[nameCode] || {}).why || null],
      ["tensor cores", { 1: "yes", 0: "no" }[k.cols.tensor_cores ? k.cols.tensor_cores[f] : -1] || "unknown"],
      ["launches", fmtInt(idx.length)],
      ["total / mean", `${fmtUs(total)} / ${fmtUs(total / idx.length)}`],
      ["min / max", `${fmtUs(min)} / ${fmtUs(max)}`],
      ["CPU op", [...ops.entries()].sort((a, b) => b[1] - a[1]).map(([o, n]) => `${o} ×${n}`).join(", ")],
      ["source", sources.size ? [...sources].slice(0, 3).join("; ") : "-"],
      ["grid / block", `${shape.grid.varies ? `${shape.grid.text} blocks` : dims(k, "grid", f)} / ${shape.block.varies ? "mixed" : dims(k, "block", f)}`
        + (shape.grid.varies || shape.block.varies ? ` (${[shape.grid.title, shape.block.title].filter(Boolean).join("; ")})` : "")],
      ["registers / thread", shape.regs.text + (shape.regs.title ? " (differs between launches)" : "")],
      ["shared memory / block", shape.smem.text + (shape.smem.title ? " (differs between launches)" : "")],
      ["waves", shape.waves.text + (shape.waves.title ? " (differs between launches)" : "")],
    ]));
  el.append(info);
  const tune = tuningBlock(model, names, new Set(ops.keys()), opts);
  if (tune) el.append(tune);
  const deep = kernelDetail(model, idx);   // Nsight Compute's measurements, when the report has them
  if (deep) el.append(deep);
  const shapeEntries = model.header.shapes || [];
  const ci = shapeEntries.findIndex((c) => c.shape === k.cols.shape[f]);
  const cfg = shapeEntries[ci];
  if (cfg && cfg.occupancy !== undefined && !cfg.curves && opts.requestCurves && !cfg.requested) {
    // Ask Python (live widget) for this launch shape's curves, then redraw the details.
    cfg.requested = true;
    opts.requestCurves(cfg.shape).then((entry) => {
      if (entry && entry.curves) shapeEntries[ci] = entry;
      if (el.getAttribute("data-names") === JSON.stringify(names)) renderDetails(el, model, names, opts);
    });
  }
  el.setAttribute("data-names", JSON.stringify(names));
  const occ = occupancyBlock(cfg, k, f);
  const shapes = new Set(idx.map((i) => k.cols.shape[i]));
  if (shapes.size > 1) {
    // Not one launch's numbers without saying so: the breakdown is of the first launch's shape.
    occ.insertBefore(h("p", { class: "ks-note ks-shapes-note", text: `These ${fmtInt(idx.length)} launches use ${shapes.size} launch shapes `
      + `(occupancy ${shape.occ.text}); the breakdown below is that of the first launch (${dims(k, "grid", f)} × ${dims(k, "block", f)}). `
      + "Expand the row for each launch's shape." }), occ.children[1] || null);
  }
  el.append(occ);
  if (occ.charts) el.append(occ.charts);
  const measured = counterBlock(model, idx);
  if (measured) el.append(measured);
  // Live (Proton) stalls; where Nsight Compute measured the launch its deep dive has the stall bars.
  const stalls = deep ? null : stallBlock(model, names);
  if (stalls) el.append(stalls);
  const ncu = ncuBlock(model, idx);
  if (ncu) el.append(ncu);
}

function occupancyBlock(cfg, k, f) {
  const block = h("div", { class: "ks-detail-block ks-occupancy" }, h("h4", { text: "Theoretical occupancy" }));
  const occ = num(k, "theoretical_occupancy", f);
  if (!cfg || cfg.occupancy === undefined) {
    block.append(h("p", { class: "ks-empty", text: occ === null
      ? "Not computed for this launch (launch shape or device properties not recorded)."
      : `${fmtPct(occ, 1)} (limited by ${str(k, "occupancy_limiter", f) || "-"})` }));
    return block;
  }
  const lim = (cfg.limiters || []).join(", ") || "-";
  const rows = [
    ["occupancy", `${fmtPct(cfg.occupancy, 1)} (computed by kernelscope, CUDA occupancy calculator)`],
    ["active blocks / SM", fmtOpt(cfg.active_blocks_per_sm)],
    ["limited by", lim],
    ["block limit: registers", fmtOpt(cfg.block_limit_registers)],
    ["block limit: shared memory", fmtOpt(cfg.block_limit_shared_mem)],
    ["block limit: warps", fmtOpt(cfg.block_limit_warps)],
    ["block limit: blocks / SM", fmtOpt(cfg.block_limit_blocks)],
  ];
  block.append(h("table", { class: "ks-kv" }, h("tbody", {}, rows.map(([a, b]) => h("tr", {}, h("th", { text: a }), h("td", { text: b }))))));
  if ((cfg.hints || []).length) {
    block.append(h("div", { class: "ks-hints" }, h("b", { text: "What would raise it: " }),
      h("ul", {}, cfg.hints.map((t) => h("li", { text: t })))));
  }
  if (!cfg.curves) {
    block.append(h("p", { class: "ks-note ks-no-curves", text: cfg.requested
      ? "Computing the occupancy curves…"
      : "Occupancy curves are saved for the costliest launch shapes only; a live kernel computes the others." }));
  }
  if (cfg.curves) {
    const charts = h("div", { class: "ks-occ-charts" });
    charts.append(h("div", { class: "ks-note", text: "Occupancy as one launch parameter varies, the others held (as Nsight Compute's occupancy graphs); the red dot is this launch." }));
    block.charts = charts;
    const graphs = [
      ["block", "threads per block", "Varying block size", cfg.threads],
      ["registers", "registers per thread", "Varying register count", cfg.registers],
      ["smem", "shared memory per block (bytes)", "Varying shared memory", cfg.smem],
    ];
    for (const [key, field, title, x] of graphs) {
      const c = h("div", { class: "ks-chart ks-occ-chart", "data-curve": key });
      charts.append(c);
      occupancyChart(c, cfg.curves[key] || [], { x, y: cfg.occupancy }, { field, title });
    }
  }
  return block;
}


/** An ncu metric in its unit (the column name's suffix says which). */
function fmtNcu(col, v) {
  if (v === null || Number.isNaN(v)) return "-";
  if (col.endsWith("_pct")) return `${v.toFixed(1)}%`;
  if (col.endsWith("_ns")) return fmtUs(v / 1000);
  if (col.endsWith("_bytes")) return fmtBytes(v);
  if (col.endsWith("_hz")) return `${(v / 1e9).toFixed(2)} GHz`;
  return Number.isInteger(v) ? fmtInt(v) : fmtNum(v, 2);
}

function ncuBlock(model, idx) {
  const cols = model.header.ncu_columns || [];
  if (!cols.length) return null;
  const k = model.tables.kernels;
  const mean = (c) => {
    if (!k.cols[c]) return null;
    const vals = idx.map((i) => k.cols[c][i]).filter((v) => !Number.isNaN(v));
    return vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : null;
  };
  const have = new Set(cols);
  const cfg = (model.header.shapes || []).find((c) => c.shape === k.cols.shape[idx[0]]) || {};
  const ours = (key) => {
    if (key === "theoretical_occupancy") { const v = mean(key); return v === null ? "-" : fmtPct(v, 1); }
    if (key === "duration_us") return fmtUs(mean(key));
    if (key && key.startsWith("block_limit_")) return cfg[key] ?? "-";
    return "";
  };
  // The ncu metrics shown beside ours first: kernelscope.trace.ncu.COMPARED_METRICS, from the payload.
  const first = vocab("ncu").map((m) => [m.label, m.column, m.ours]).filter(([, c]) => have.has(c));
  const stalls = cols.filter((c) => /stall/i.test(c));
  const rest = cols.filter((c) => !first.some(([, f]) => f === c) && !stalls.includes(c));
  const head = h("tr", {}, h("th", { text: "" }), h("th", { text: "kernelscope" }), h("th", { text: "Nsight Compute" }));
  const rows = [...first.map(([label, c, key]) => [label, ours(key), fmtNcu(c, mean(c))]),
    ...stalls.map((c) => [c.replace(/^ncu_/, "").replace(/_/g, " "), "", fmtNcu(c, mean(c))])];
  const block = h("div", { class: "ks-detail-block ks-ncu" },
    h("h4", { text: `Nsight Compute (measured${idx.length > 1 ? `, mean of ${idx.length} launches` : ""})` }),
    h("table", { class: "ks-kv ks-ncu-compare" }, h("thead", {}, head),
      h("tbody", {}, rows.map(([a, b, c]) => h("tr", { "data-metric": a }, h("th", { text: a }), h("td", { text: b }), h("td", { text: c }))))));
  if (rest.length) {
    block.append(h("details", {}, h("summary", { text: `all ${cols.length} metrics` }),
      h("table", { class: "ks-kv" }, h("tbody", {}, rest.map((c) =>
        h("tr", {}, h("th", { text: c.replace(/^ncu_/, "") }), h("td", { text: fmtNcu(c, mean(c)) })))))));
  }
  return block;
}

function dims(k, which, i) {
  const x = int(k, `${which}_x`, i);
  if (x === null) return "-";
  return [x, int(k, `${which}_y`, i) ?? 1, int(k, `${which}_z`, i) ?? 1].join("×");
}

function fmtOpt(v) { return v === null || v === undefined ? "-" : String(v); }
