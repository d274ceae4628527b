// anywidget entry: the report view of a kernelscope.widget.ReportWidget. The report's data is
// asked of Python with a custom message (it is not a synced trait, so saved widget state stays
// small), once per widget model on this page; `selection` syncs both ways.
import { fromPacked } from "./view/data.js";
import { renderReport } from "./view/report.js";
import { h } from "./view/format.js";
import css from "./view/style.css";

// How long to wait for the kernel before saying why nothing shows.
const WAIT_MS = 5000;
const reports = new WeakMap();

/** The decoded report of a widget model (asked for once; every view of the model shares it). */
function reportOf(model) {
  if (!reports.has(model)) {
    reports.set(model, new Promise((resolve, reject) => {
      const onData = (msg, buffers) => {
        if (!msg || msg.type !== "data") return;
        model.off("msg:custom", onData);
        fromPacked(buffers && buffers[0]).then(resolve, reject);
      };
      model.on("msg:custom", onData);
      model.send({ type: "data" });
    }));
  }
  return reports.get(model);
}

/** Our stylesheet, once per document (anywidget would add one per widget). */
function addStyle() {
  if (document.getElementById("kernelscope-style")) return;
  const style = document.createElement("style");
  style.id = "kernelscope-style";
  style.textContent = css;
  document.head.append(style);
}

function render({ model, el }) {
  addStyle();
  // Occupancy curves the header lacks are computed by Python on request (custom messages).
  const pending = new Map();
  const pendingRanks = new Map();
  const pendingWindows = new Map();
  let windowAsks = 0;
  const fetchWindow = (from_us, until_us, kernel) => new Promise((resolve, reject) => {
    const id = ++windowAsks;
    pendingWindows.set(id, { resolve, reject });
    model.send({ type: "window", id, from_us, until_us, kernel: kernel ?? null });
  });
  const onMsg = (msg, buffers) => {
    if (msg && msg.type === "curves" && pending.has(msg.shape)) {
      pending.get(msg.shape)(msg.entry);
      pending.delete(msg.shape);
    }
    if (msg && msg.type === "trace" && pendingTrace) {
      const resolve = pendingTrace;
      pendingTrace = null;
      const data = (buffers || [])[0];
      resolve({ name: msg.name, error: msg.error, bytes: data ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : null });
    }
    // Another window of a report too big for one view, asked for by the window chooser.
    if (msg && msg.type === "window" && pendingWindows.has(msg.id)) {
      const { resolve, reject } = pendingWindows.get(msg.id);
      pendingWindows.delete(msg.id);
      const data = (buffers || [])[0];
      if (msg.error || !data) reject(new Error(msg.error || "no data came back"));
      else fromPacked(data).then(resolve, reject);
    }
    // One rank's full report, asked for by the multi-rank view's rank selector.
    if (msg && msg.type === "rank" && pendingRanks.has(msg.rank)) {
      const resolve = pendingRanks.get(msg.rank);
      pendingRanks.delete(msg.rank);
      const data = (buffers || [])[0];
      if (msg.error || !data) resolve(null);
      else fromPacked(data).then(resolve, () => resolve(null));
    }
  };
  model.on("msg:custom", onMsg);
  const requestCurves = (shape) => new Promise((resolve) => {
    pending.set(shape, resolve);
    model.send({ type: "curves", shape });
  });
  const requestRank = (rank) => new Promise((resolve) => {
    pendingRanks.set(rank, resolve);
    model.send({ type: "rank", rank });
  });
  // The raw trace for "Perfetto" (perfetto.js): Python reads the file the report came from.
  let pendingTrace = null;
  const trace = { fetch: () => new Promise((resolve) => {
    pendingTrace = resolve;
    model.send({ type: "trace" });
  }) };
  let ctl = null;
  let gone = false;
  el.textContent = "";
  // Not .ks-root: that class marks a drawn report (tests and the lab renderer wait for it).
  el.append(h("div", { class: "ks-loading", text: "kernelscope: loading the report…" }));
  const slow = setTimeout(() => {
    if (!ctl && !gone) {
      el.firstChild.textContent = "kernelscope: waiting for the report's data from the Python kernel. If the kernel "
        + "has gone, run the cell again; JupyterLab and Notebook 7 with kernelscope installed show a saved "
        + "report from the notebook's own output, with no kernel.";
    }
  }, WAIT_MS);
  reportOf(model).then((view) => {
    clearTimeout(slow);
    if (gone) return;
    ctl = renderReport(el, view, {
      requestCurves,
      requestRank,
      fetchWindow,
      trace,
      onSelect(names) {
        model.set("selection", names);
        model.save_changes();
      },
    });
    if (ctl.setSelection) ctl.setSelection(model.get("selection") || []);
  }, (err) => {
    clearTimeout(slow);
    if (!gone) el.textContent = `kernelscope: cannot read the report (${err && err.message})`;
  });
  const onSel = () => ctl && ctl.setSelection && ctl.setSelection(model.get("selection") || []);
  model.on("change:selection", onSel);
  return () => {
    gone = true;
    clearTimeout(slow);
    model.off("change:selection", onSel);
    model.off("msg:custom", onMsg);
    pending.clear();
    pendingWindows.clear();
  };
}

export default { render };
