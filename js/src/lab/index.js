// JupyterLab 4 extension: renders saved kernelscope reports with no kernel (MIME renderer),
// adds "Profile cell", and opens trace/report files in a tab (parsed by our server extension).
import { IRenderMimeRegistry } from "@jupyterlab/rendermime";
import { INotebookTracker } from "@jupyterlab/notebook";
import { OutputArea } from "@jupyterlab/outputarea";
import { ICommandPalette } from "@jupyterlab/apputils";
import { CommandToolbarButton } from "@jupyterlab/ui-components";
import { ABCWidgetFactory, DocumentWidget, TextModelFactory } from "@jupyterlab/docregistry";
import { ServerConnection } from "@jupyterlab/services";
import { URLExt } from "@jupyterlab/coreutils";
import { Panel, Widget } from "@lumino/widgets";
import { MIME_TYPE, fromMime } from "../view/data.js";

// The report view (table, timeline, charts) is a separate chunk, fetched when a report is first
// shown: JupyterLab starts without it, and a session that shows no report never loads it.
let view = null;
function loadView() {
  view = view || import(/* webpackChunkName: "kernelscope-view" */ "../view/report.js")
    .catch((err) => { view = null; throw err; });   // a failed fetch is tried again next time
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
const LOAD_EXTENSION = "get_ipython().extension_manager.load_extension('kernelscope')";
// How long to wait for a live widget before showing the report from the saved data.
const WIDGET_WAIT_MS = 4000;

/** Renders application/vnd.kernelscope.report.v1+json. */
class ReportRenderer extends Panel {
  constructor(options, ctx = {}) {
    super();
    this.addClass("ks-lab-renderer");
    this.mimeType = options.mimeType;
    this._ctx = ctx;
  }

  async renderModel(model) {
    const payload = model.data[this.mimeType];
    while (this.widgets.length) this.widgets[0].dispose();
    if (model.data[WIDGET_MIME] && this._ctx.rendermime && this._hasKernel()) {
      if (await this._tryWidget(model, () => this._showSaved(payload))) return;
    }
    await this._showSaved(payload);
  }

  /** The report from the output's own data: no kernel, or its live widget has been closed. */
  async _showSaved(payload) {
    if (this.isDisposed) return;
    while (this.widgets.length) this.widgets[0].dispose();
    const host = new Widget();
    host.addClass("ks-lab-static");
    this.addWidget(host);
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

  async _tryWidget(model, onClosed) {
    const rm = this._ctx.rendermime;
    if (!rm.getFactory(WIDGET_MIME)) return false;
    const r = rm.createRenderer(WIDGET_MIME);
    r.hide();
    this.addWidget(r);
    let timer;
    const timeout = new Promise((res) => { timer = setTimeout(res, WIDGET_WAIT_MS); });
    try {
      await Promise.race([r.renderModel(model), timeout]);
    } catch (err) {
      console.warn("kernelscope: live widget failed, showing the saved report", err);
    }
    clearTimeout(timer);
    // ipywidgets' renderer adds the view as a child only when the widget model exists.
    if (r.widgets && r.widgets.length > 0) {
      r.show();
      // kernelscope closes a widget when its report is shown again elsewhere or its cell runs
      // again: an output still on screen then keeps the report, drawn from its saved data.
      r.widgets[0].disposed.connect(() => { if (!this.isDisposed && !r.isDisposed) onClosed(); });
      return true;
    }
    r.dispose();
    return false;
  }
}

function rendererFactory(ctx) {
  return { safe: true, mimeTypes: [MIME_TYPE], defaultRank: RANK,
    createRenderer: (options) => new ReportRenderer(options, ctx) };
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
    const url = URLExt.join(settings.baseUrl, "kernelscope", "report") + `?path=${encodeURIComponent(this.path)}`;
    try {
      const resp = await ServerConnection.makeRequest(url, {}, settings);
      const body = await resp.json();
      if (!resp.ok) throw new Error(body.message || resp.statusText);
      // The timeline's lanes fill the tab's height; a trace file is itself the raw trace for Perfetto.
      const isTrace = /\.json(\.gz)?$/i.test(this.path) && !/\.ksreport\.json(\.gz)?$/i.test(this.path);
      const trace = isTrace ? { fetch: () => this._fetchFile(settings) } : null;
      await showReport(this.node, body, { tableHeight: 480, fill: this.node, trace });
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

// The server reads the file itself: the document context need not download it.
class NoContentModelFactory extends TextModelFactory {
  get name() { return "kernelscope-file"; }
  get fileFormat() { return null; }
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
    app.docRegistry.addFileType({
      name: FILE_TYPE, displayName: "kernelscope trace",
      extensions: [".pt.trace.json", ".pt.trace.json.gz", ".ksreport.json", ".ksreport.json.gz", ".ncu-rep"],
      mimeTypes: ["application/json"], contentType: "file", fileFormat: "text",
    });
    app.docRegistry.addModelFactory(new NoContentModelFactory());
    app.docRegistry.addWidgetFactory(new TraceFactory({
      name: "kernelscope report", modelName: "kernelscope-file", fileTypes: [FILE_TYPE],
      defaultFor: [FILE_TYPE], readOnly: true,
    }));
  },
};

export default [rendererPlugin, profilePlugin, filePlugin];
