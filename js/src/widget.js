// anywidget entry: the report view over the widget model's traits (data, selection).
import { fromPacked } from "./view/data.js";
import { renderReport } from "./view/report.js";

async function render({ model, el }) {
  // Occupancy curves the header lacks are computed by Python on request (custom messages).
  const pending = new Map();
  const onMsg = (msg) => {
    if (msg && msg.type === "curves" && pending.has(msg.config)) {
      pending.get(msg.config)(msg.entry);
      pending.delete(msg.config);
    }
  };
  model.on("msg:custom", onMsg);
  const requestCurves = (config) => new Promise((resolve) => {
    pending.set(config, resolve);
    model.send({ type: "curves", config });
  });
  let ctl = null;
  let drawing = 0;
  const draw = async () => {
    const n = ++drawing;
    let view;
    try {
      view = await fromPacked(model.get("data"));
    } catch (err) {
      el.textContent = `kernelscope: cannot read the report (${err && err.message})`;
      ctl = null;
      return;
    }
    if (n !== drawing) return;   // newer data arrived while this was inflating
    ctl = renderReport(el, view, {
      requestCurves,
      onSelect(names) {
        model.set("selection", names);
        model.save_changes();
      },
    });
    ctl.setSelection(model.get("selection") || []);
  };
  await draw();
  const onSel = () => ctl && ctl.setSelection(model.get("selection") || []);
  const onData = () => { draw(); };
  model.on("change:selection", onSel);
  model.on("change:data", onData);
  return () => {
    model.off("change:selection", onSel);
    model.off("change:data", onData);
    model.off("msg:custom", onMsg);
    pending.clear();
  };
}

export default { render };
