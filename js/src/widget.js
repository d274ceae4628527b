// anywidget entry: the report view of a kernelscope.view.widget.ReportWidget (Python partner:
// kernelscope/view/widget.py). The report's data is asked of Python (it is not a synced trait, so
// saved widget state stays small), once per widget model on this page; `selection` syncs both
// ways. Every request to Python goes through one channel (channel.js): the report's data, a launch
// shape's occupancy curves, the raw trace, another window, one rank's report.
import { makeChannel } from "./channel.js";
import { fromPacked } from "./view/data.js";
import { renderReport } from "./view/report.js";
import { h } from "./view/format.js";
import css from "./view/style.css";

// How long to wait for the kernel before saying why nothing shows.
const WAIT_MS = 5000;
// How long each kind of request waits for its reply, generously: a kernel running a cell may
// answer only once the cell ends, the report's data and a window are packed from a report of
// millions of events (seconds), a rank's report reads that rank's trace file again (a big one takes
// a minute or more), the raw trace is a file of up to hundreds of MB. A shape's curves take
// milliseconds, but wait for a busy kernel too.
const TIMEOUT_MS = { data: 120_000, window: 120_000, trace: 120_000, rank: 300_000, curves: 30_000 };
// Test hook (tests/ui): globalThis.kernelscopeTimeouts = { kind: ms } shortens a kind's time-out.
const timeoutOf = (kind) => (globalThis.kernelscopeTimeouts || {})[kind] ?? TIMEOUT_MS[kind];
const reports = new WeakMap();

/** The decoded report of a widget model: asked for once, every view of the model shares it. A
 * failed ask is not kept: the next view (or "ask again") asks again. */
function reportOf(model, ask) {
  let got = reports.get(model);
  if (!got) {
    got = ask("data").then(({ buffers }) => fromPacked(buffers[0]));
    reports.set(model, got);
    got.catch(() => {
      if (reports.get(model) === got) reports.delete(model);
    });
  }
  return got;
}

const bytesOf = (data) => new Uint8Array(data.buffer, data.byteOffset, data.byteLength);

/** What renderReport asks Python through (view/report.js, ranks.js, windows.js, perfetto.js). */
function requests(ask) {
  return {
    // A launch shape's occupancy curves -> its entry, or null (the details keep the breakdown).
    requestCurves: (shape) =>
      ask("curves", { shape }).then(
        ({ msg }) => msg.entry,
        () => null
      ),
    // One rank's full report -> its model, or null (the rank view says it could not be opened).
    requestRank: (rank) =>
      ask("rank", { rank })
        .then(({ buffers }) => fromPacked(buffers[0]))
        .catch(() => null),
    // Another window of a report too big for one view -> its model; rejects saying why not.
    fetchWindow: (from_us, until_us, kernel) =>
      ask("window", { from_us, until_us, kernel: kernel ?? null }).then(({ buffers }) => {
        if (!buffers[0]) throw new Error("no data came back");
        return fromPacked(buffers[0]);
      }),
    // "Perfetto": the file the report was read from -> { name, error, bytes } (bytes null: error says why).
    trace: {
      fetch: () =>
        ask("trace").then(
          ({ msg, buffers }) => ({ name: msg.name, error: null, bytes: buffers[0] ? bytesOf(buffers[0]) : null }),
          (err) => ({ name: (err.reply && err.reply.name) || null, error: err.message, bytes: null })
        ),
    },
  };
}

/** Our stylesheet, once per document (anywidget would add one per widget). */
function addStyle() {
  if (document.getElementById("kernelscope-style")) return;
  const style = document.createElement("style");
  style.id = "kernelscope-style";
  style.textContent = css;
  document.head.append(style);
}

/** The report's data did not come: why, and a button that asks again. */
function showLoadError(el, err, again) {
  el.textContent = "";
  el.append(
    h(
      "div",
      { class: "ks-load-error" },
      `kernelscope: cannot read the report (${err && err.message}) `,
      h("button", { class: "ks-btn ks-ask-again", text: "ask again", onclick: again })
    )
  );
}

function render({ model, el }) {
  addStyle();
  const channel = makeChannel(model);
  const ask = (kind, body) => channel.request(kind, body, { timeoutMs: timeoutOf(kind) });
  let ctl = null;
  let gone = false;
  // Not .ks-root: that class marks a drawn report (tests and the lab renderer wait for it).
  const loading = () => h("div", { class: "ks-loading", text: "kernelscope: loading the report…" });
  el.textContent = "";
  el.append(loading());
  const slow = setTimeout(() => {
    if (!ctl && !gone) {
      el.firstChild.textContent =
        "kernelscope: waiting for the report's data from the Python kernel. If the kernel "
        + "has gone, run the cell again; JupyterLab and Notebook 7 with kernelscope installed show a saved "
        + "report from the notebook's own output, with no kernel.";
    }
  }, WAIT_MS);
  const show = (view) => {
    clearTimeout(slow);
    if (gone) return;
    ctl = renderReport(el, view, {
      ...requests(ask),
      onSelect(names) {
        model.set("selection", names);
        model.save_changes();
      },
    });
    if (ctl.setSelection) ctl.setSelection(model.get("selection") || []);
  };
  const load = () =>
    reportOf(model, ask).then(show, (err) => {
      if (gone) return undefined;
      // Another view of this model asked first and went away before the reply: ask on ours.
      if (err && err.reason === "closed") return load();
      clearTimeout(slow);
      showLoadError(el, err, () => {
        el.textContent = "";
        el.append(loading());
        load();
      });
      return undefined;
    });
  load();
  const onSel = () => ctl && ctl.setSelection && ctl.setSelection(model.get("selection") || []);
  model.on("change:selection", onSel);
  return () => {
    gone = true;
    clearTimeout(slow);
    model.off("change:selection", onSel);
    channel.close(); // its listener goes; what still waits rejects (nothing is drawn for it)
  };
}

export default { render };
