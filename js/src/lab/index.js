// JupyterLab 4 extension: renders saved kernelscope reports with no kernel (MIME renderer),
// adds "Profile cell", and opens trace/report files in a tab (parsed by our server extension).
import { IRenderMimeRegistry } from "@jupyterlab/rendermime";
import { INotebookTracker } from "@jupyterlab/notebook";
import { OutputArea } from "@jupyterlab/outputarea";
import { ICommandPalette } from "@jupyterlab/apputils";
import { CommandToolbarButton } from "@jupyterlab/ui-components";
import { ABCWidgetFactory, DocumentModel, DocumentWidget, TextModelFactory } from "@jupyterlab/docregistry";
import { ServerConnection } from "@jupyterlab/services";
import { PageConfig, URLExt } from "@jupyterlab/coreutils";
import { Panel, Widget } from "@lumino/widgets";
import { MIME_TYPE, fromMime } from "../view/data.js";

// The report view (table, timeline, charts) is a separate chunk, fetched when a report is first
// shown: JupyterLab starts without it, and a session that shows no report never loads it.
let view = null;
function loadView() {
  view =
    view
    || import(/* webpackChunkName: "kernelscope-view" */ "../view/report.js").catch((err) => {
      view = null;
      throw err;
    }); // a failed fetch is tried again next time
  return view;
}

/** Decode a MIME payload and render it into `node`. */
async function showReport(node, payload, opts) {
  const [{ renderReport }, model] = await Promise.all([loadView(), fromMime(payload)]);
  return renderReport(node, model, opts);
}

const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";
// ipywidgets registers its renderer at rank -10; ours comes first and hands over to the live
// widget itself when the widget's model exists (live kernel), so selection still syncs to Python.
const RANK = -20;
const CMD_PROFILE = "kernelscope:profile-cell";
const FILE_TYPE = "kernelscope-trace";
const FILES_OPTION = "kernelscopeFiles"; // page config: the file names our server route reads
const LOAD_EXTENSION = "get_ipython().extension_manager.load_extension('kernelscope')";
// How long to wait for a live widget, when a kernel is there, before showing the saved report.
const WIDGET_WAIT_MS = 4000;

/**
 * Renders application/vnd.kernelscope.report.v1+json.
 *
 * With a live widget beside our MIME entry, the report is the widget's (selection reaches Python).
 * When the kernel is there as the output renders, the widget shows as soon as ipywidgets has its
 * model. Otherwise (no kernel, or a page reload: outputs render before the session reconnects)
 * the saved report shows at once, and a hidden widget renderer keeps waiting: once the session
 * connects and ipywidgets restores the kernel's widgets, the live report takes the saved one's
 * place. A kernel that no longer holds the widget (restarted, or a reader's copy) leaves the
 * saved report in place.
 */
class ReportRenderer extends Panel {
  constructor(options, ctx = {}) {
    super();
    this.addClass("ks-lab-renderer");
    this.mimeType = options.mimeType;
    this._ctx = ctx;
    this._saved = null;
    this._watches = new Set();
  }

  async renderModel(model) {
    const payload = model.data[this.mimeType];
    this._stopWatching();
    while (this.widgets.length) this.widgets[0].dispose();
    this._saved = null;
    const rm = this._ctx.rendermime;
    if (!(model.data[WIDGET_MIME] && rm && rm.getFactory(WIDGET_MIME))) {
      await this._showSaved(payload);
      return;
    }
    const factory = rm.getFactory(WIDGET_MIME);
    const r = this._widgetRenderer(model);
    const shown = this._watch(r, () => r.widgets.length > 0);
    let timer;
    const first = await Promise.race([
      shown,
      new Promise((res) => {
        timer = setTimeout(() => res(null), this._hasKernel() ? WIDGET_WAIT_MS : 0);
      }),
    ]);
    clearTimeout(timer);
    if (first === true) {
      this._showLive(r, payload);
      return;
    }
    await this._showSaved(payload);
    if (first === false) {
      r.dispose();
      return;
    }
    // Re-attach: swap in the live report once it has drawn (no "loading" flash over the saved one).
    const drawnIn = (w) =>
      this._watch(w, () => w.widgets.length > 0 && !!w.node.querySelector(".ks-root:not(.ks-loading)"));
    let live = r;
    let drawn = drawnIn(r);
    // Before the session connects, ipywidgets' renderers have no widget manager, and it gives
    // its manager only to renderers that are direct children of an output: once it replaces its
    // renderer factory with one bound to the manager, render the widget again with that one.
    const next = await Promise.race([
      drawn.then((ok) => ({ ok })),
      this._newFactory(rm, factory).then(() => ({ fresh: true })),
    ]);
    if (next.fresh && !this.isDisposed) {
      r.dispose();
      live = this._widgetRenderer(model);
      drawn = drawnIn(live);
    }
    const ok = next.fresh ? await drawn : next.ok;
    if (ok && !this.isDisposed && !live.isDisposed) this._showLive(live, payload);
    else if (!live.isDisposed) live.dispose();
  }

  /** A hidden renderer of the output's widget view, rendering. */
  _widgetRenderer(model) {
    const r = this._ctx.rendermime.createRenderer(WIDGET_MIME);
    r.hide();
    this.addWidget(r);
    r.renderModel(model).catch((err) => console.warn("kernelscope: live widget failed, showing the saved report", err));
    return r;
  }

  /** Resolves when ipywidgets has replaced its widget renderer factory (its manager is ready);
   * never, where it keeps the one it had. */
  async _newFactory(rm, old) {
    const s = this._ctx.sessionContext;
    if (s) await s.ready;
    for (let i = 0; i < 200 && !this.isDisposed; i++) {
      const f = rm.getFactory(WIDGET_MIME);
      if (f && f !== old) return f;
      await new Promise((res) => setTimeout(res, 50));
    }
    return new Promise(() => {});
  }

  /** Resolves true once `ready()` holds for the hidden widget renderer, false once it never will
   * (ipywidgets says the model is not in the kernel, or the renderer went away). */
  _watch(r, ready) {
    return new Promise((resolve) => {
      let obs = null;
      const done = (v) => {
        if (obs) {
          obs.disconnect();
          this._watches.delete(obs);
        }
        resolve(v);
      };
      const check = () => {
        if (this.isDisposed || r.isDisposed) return done(false);
        if (ready()) return done(true);
        if (!r.widgets.length && /Error displaying widget/.test(r.node.textContent || "")) return done(false);
        return null;
      };
      if (check() !== null) return;
      r.disposed.connect(() => done(false));
      obs = new MutationObserver(check);
      obs.cancel = () => done(false);
      this._watches.add(obs);
      obs.observe(r.node, { childList: true, subtree: true, characterData: true, attributes: true });
    });
  }

  _stopWatching() {
    for (const obs of [...this._watches]) obs.cancel();
  }

  /** The live widget in place of the saved report. */
  _showLive(r, payload) {
    if (this._saved) {
      this._saved.dispose();
      this._saved = null;
    }
    r.show();
    // kernelscope closes a widget when its report is shown again elsewhere or its cell runs
    // again: an output still on screen then keeps the report, drawn from its saved data.
    const view = r.widgets[0];
    if (view)
      view.disposed.connect(() => {
        if (!this.isDisposed && !r.isDisposed) this._showSaved(payload);
      });
  }

  /** The report from the output's own data: no kernel (yet), or its live widget has been closed. */
  async _showSaved(payload) {
    if (this.isDisposed) return;
    if (this._saved) this._saved.dispose();
    const host = new Widget();
    host.addClass("ks-lab-static");
    this._saved = host;
    this.insertWidget(0, host);
    try {
      await showReport(host.node, payload, {});
      host.node.setAttribute("data-source", "saved");
    } catch (err) {
      host.node.textContent = `kernelscope: cannot render this report (${err && err.message})`;
    }
  }

  _hasKernel() {
    const s = this._ctx.sessionContext;
    return !!(s && s.session && s.session.kernel);
  }

  dispose() {
    if (this.isDisposed) return;
    this._stopWatching();
    super.dispose();
  }
}

function rendererFactory(ctx) {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    defaultRank: RANK,
    createRenderer: (options) => new ReportRenderer(options, ctx),
  };
}

/** A tab showing a trace or report file, parsed by the server extension (no kernel needed). */
class TraceView extends Widget {
  constructor(path) {
    super();
    this.addClass("ks-lab-file");
    this.node.style.overflow = "auto";
    this.node.style.padding = "8px";
    this.path = path;
    this.node.textContent = `Reading ${path}…`;
    this._load();
  }

  async _load() {
    const settings = ServerConnection.makeSettings();
    const url = `${URLExt.join(settings.baseUrl, "kernelscope", "report")}?path=${encodeURIComponent(this.path)}`;
    try {
      const resp = await ServerConnection.makeRequest(url, {}, settings);
      const body = await resp.json();
      if (!resp.ok) throw new Error(body.message || resp.statusText);
      // The timeline's lanes fill the tab's height; a trace file is itself the raw trace for Perfetto.
      const isTrace = /\.json(\.gz)?$/i.test(this.path) && !/\.ksreport\.json(\.gz)?$/i.test(this.path);
      const trace = isTrace ? { fetch: () => this._fetchFile(settings) } : null;
      // Another window of a trace too big for one view: the server reads it from the same file.
      const fetchWindow = async (from, until, kernel) => {
        const q =
          `&window=1&from_us=${from ?? ""}&until_us=${until ?? ""}`
          + (kernel ? `&kernel=${encodeURIComponent(kernel)}` : "");
        const r = await ServerConnection.makeRequest(url + q, {}, settings);
        const b = await r.json();
        if (!r.ok) throw new Error(b.message || r.statusText);
        return fromMime(b);
      };
      await showReport(this.node, body, { tableHeight: 480, fill: this.node, trace, fetchWindow });
    } catch (err) {
      this.node.textContent = `kernelscope: ${err && err.message}`;
      this.node.classList.add("ks-error");
    }
  }

  /** The trace file's bytes, from Jupyter's own file route (what its Download menu fetches). */
  async _fetchFile(settings) {
    const url = URLExt.join(settings.baseUrl, "files", URLExt.encodeParts(this.path));
    const resp = await ServerConnection.makeRequest(url, {}, settings);
    if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
    return { name: this.path.split("/").pop(), bytes: new Uint8Array(await resp.arrayBuffer()) };
  }
}

// A report tab holds nothing to save. JupyterLab's document context checkpoints every file it
// opens that it could save (a full copy in .ipynb_checkpoints/: 304 MB for a big trace) unless
// the model is collaborative (context.js, canSave): this model says so, and Save stays off.
class ReadOnlyModel extends DocumentModel {
  get collaborative() {
    return true;
  }
}

// The server reads the file itself: the document context need not download it.
class NoContentModelFactory extends TextModelFactory {
  get name() {
    return "kernelscope-file";
  }
  get fileFormat() {
    return null;
  }
  createNew(options = {}) {
    return new ReadOnlyModel(options);
  }
}

class TraceFactory extends ABCWidgetFactory {
  createNewWidget(context) {
    const w = new DocumentWidget({ content: new TraceView(context.path), context });
    w.title.label = context.path.split("/").pop();
    return w;
  }
}

async function profileCells(tracker) {
  const panel = tracker.currentWidget;
  if (!panel) return;
  const nb = panel.content;
  const ctx = panel.sessionContext;
  const cells = nb.widgets.filter((c) => c.model.type === "code" && nb.isSelectedOrActive(c));
  if (!cells.length) return;
  await ctx.ready;
  if (!ctx.session || !ctx.session.kernel) {
    await ctx.startKernel();
  }
  const kernel = ctx.session && ctx.session.kernel;
  if (!kernel) return;
  await kernel.requestExecute({ code: LOAD_EXTENSION, silent: true, store_history: false }).done;
  for (const cell of cells) {
    const src = cell.model.sharedModel.getSource();
    const code = /^\s*%%kernelprofile\b/.test(src) ? src : `%%kernelprofile\n${src}`;
    cell.model.executionCount = null;
    cell.setPrompt("*");
    try {
      // With the cell's id, as JupyterLab's own Run sends it (kernelscope closes the widgets of
      // the cell's previous run by it).
      const reply = await OutputArea.execute(code, cell.outputArea, ctx, { cellId: cell.model.sharedModel.getId() });
      if (reply && reply.content) cell.model.executionCount = reply.content.execution_count;
      if (reply && reply.content && reply.content.status !== "ok") break;
    } catch (err) {
      cell.setPrompt("");
      console.error("kernelscope: profiling the cell failed", err);
      break;
    }
  }
}

const rendererPlugin = {
  id: "kernelscope:renderer",
  description: "Renders kernelscope reports from notebook outputs, with or without a kernel.",
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate(app, rendermime) {
    rendermime.addFactory(rendererFactory({}), RANK);
    // Per notebook: the renderer also needs that notebook's rendermime (where ipywidgets
    // registers its widget renderer) and kernel session.
    app.docRegistry.addWidgetExtension("Notebook", {
      createNew(panel) {
        const rm = panel.content.rendermime;
        rm.addFactory(rendererFactory({ rendermime: rm, sessionContext: panel.sessionContext }), RANK);
      },
    });
  },
};

const profilePlugin = {
  id: "kernelscope:profile-cell",
  description: "Profile cell: run the selected code cells under %%kernelprofile.",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate(app, tracker, palette) {
    app.commands.addCommand(CMD_PROFILE, {
      label: "Profile cell",
      caption: "Run the selected cells under %%kernelprofile (kernelscope), without editing them",
      isEnabled: () => !!tracker.currentWidget && !!tracker.activeCell && tracker.activeCell.model.type === "code",
      execute: () => profileCells(tracker),
    });
    app.commands.addKeyBinding({ command: CMD_PROFILE, keys: ["Accel Alt P"], selector: ".jp-Notebook" });
    app.contextMenu.addItem({ command: CMD_PROFILE, selector: ".jp-Notebook .jp-CodeCell", rank: 0 });
    if (palette) palette.addItem({ command: CMD_PROFILE, category: "kernelscope" });
    app.docRegistry.addWidgetExtension("Notebook", {
      createNew(panel) {
        const button = new CommandToolbarButton({ commands: app.commands, id: CMD_PROFILE, label: "Profile" });
        button.addClass("ks-profile-button");
        panel.toolbar.insertAfter("cellType", "kernelscope-profile", button);
        return button;
      },
    });
  },
};

const filePlugin = {
  id: "kernelscope:trace-viewer",
  description: "Opens torch.profiler traces and kernelscope report files as a report tab.",
  autoStart: true,
  activate(app) {
    // Which names open here is kernelscope's server extension's to say (the route that reads them):
    // Kineto and JAX traces, saved reports, Nsight Compute reports, compressed or not.
    const pattern = PageConfig.getOption(FILES_OPTION);
    if (!pattern) console.warn("kernelscope: the server extension is not enabled; trace files open as text");
    app.docRegistry.addFileType({
      name: FILE_TYPE,
      displayName: "kernelscope trace",
      extensions: [],
      pattern: pattern || undefined,
      mimeTypes: ["application/json"],
      contentType: "file",
      fileFormat: "text",
    });
    app.docRegistry.addModelFactory(new NoContentModelFactory());
    app.docRegistry.addWidgetFactory(
      new TraceFactory({
        name: "kernelscope report",
        modelName: "kernelscope-file",
        fileTypes: [FILE_TYPE],
        defaultFor: [FILE_TYPE],
        readOnly: true,
      })
    );
  },
};

export default [rendererPlugin, profilePlugin, filePlugin];
