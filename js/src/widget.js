// anywidget entry: the report view over the widget model's traits (header, data, selection).
import { fromBytes } from "./view/data.js";
import { renderReport } from "./view/report.js";

function render({ model, el }) {
  // Occupancy curves the header lacks are computed by Python on request (custom messages).
  const pending = new Map();
  const pendingRanks = new Map();
  const onMsg = (msg, buffers) => {
    if (msg && msg.type === "curves" && pending.has(msg.config)) {
      pending.get(msg.config)(msg.entry);
      pending.delete(msg.config);
    }
    // One rank's full report, asked for by the multi-rank view's rank selector.
    if (msg && msg.type === "rank" && pendingRanks.has(msg.rank)) {
      let view = null;
      try { view = msg.header ? fromBytes(msg.header, (buffers || [])[0]) : null; } catch (err) { view = null; }
      pendingRanks.get(msg.rank)(view);
      pendingRanks.delete(msg.rank);
    }
  };
  model.on("msg:custom", onMsg);
  const requestCurves = (config) => new Promise((resolve) => {
    pending.set(config, resolve);
    model.send({ type: "curves", config });
  });
  const requestRank = (rank) => new Promise((resolve) => {
    pendingRanks.set(rank, resolve);
    model.send({ type: "rank", rank });
  });
  const draw = () => {
    let view;
    try {
      view = fromBytes(model.get("header"), model.get("data"));
    } catch (err) {
      el.textContent = `kernelscope: cannot read the report (${err && err.message})`;
      return null;
    }
    const ctl = renderReport(el, view, {
      requestCurves,
      requestRank,
      onSelect(names) {
        model.set("selection", names);
        model.save_changes();
      },
    });
    if (ctl.setSelection) ctl.setSelection(model.get("selection") || []);
    return ctl;
  };
  let ctl = draw();
  const onSel = () => ctl && ctl.setSelection && ctl.setSelection(model.get("selection") || []);
  const onData = () => { ctl = draw(); };
  model.on("change:selection", onSel);
  model.on("change:data", onData);
  return () => {
    model.off("change:selection", onSel);
    model.off("change:data", onData);
    model.off("msg:custom", onMsg);
  };
}

export default { render };
