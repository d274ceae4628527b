"""The anywidget view of a Report (kept apart from the user API, as jupyter-scatter does).

The browser asks for the report's view model (``kernelscope.view.report``: the JSON header and
the typed-array columns, packed and gzipped) with a custom message when a view first renders,
and gets it back as one binary buffer. It is not a synced trait on purpose: the widget's state is
saved into the notebook with every displayed report (nbclient, nbconvert --execute, papermill,
JupyterLab's "Save Widget State Automatically"), while the same data is already in the output's
own MIME entry, which renders it with no kernel. The browser writes back ``selection`` (kernel
names), and :attr:`ReportWidget.selected` turns it into the matching launch rows. A report too
big for one view sends one window of its trace; the view's window chooser asks for another with
a custom message (``{"type": "window", "from_us", "until_us"}``, or ``"kernel"``: from the
next launch of that kernel after ``from_us``).

Lifecycle: every open widget lives in the kernel, in the front end's widget manager and (when
widget state is saved) in the notebook file, so kernelscope closes the ones nobody can see any
more: a report displayed again replaces its earlier display widget, and a cell that runs again
closes the widgets its previous run displayed (the cell is known by the ``cellId`` JupyterLab,
Notebook 7 and VS Code send with each execution).
"""
from __future__ import annotations

import pathlib
import weakref

import anywidget
import pandas as pd
import traitlets

from kernelscope.panels.shapes import shape_details
from kernelscope.view.codec import pack
from kernelscope.view.report import kernel_window, view_model

_STATIC = pathlib.Path(__file__).parent.parent / "static"


class ReportWidget(anywidget.AnyWidget):
    """Interactive report: kernel table, timeline, backends, occupancy, roofline, findings.

    >>> w = ReportWidget(ks.load("mlp_train.pt.trace.json.gz"))   # doctest: +SKIP
    >>> w                                                        # doctest: +SKIP
    >>> w.selected            # the launches of the kernels selected in the table  # doctest: +SKIP
    """

    # A small loader holding the view gzipped (js/src/widget_loader.js); the view brings its CSS.
    _esm = _STATIC / "widget.js"

    selection = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(self, report, *, model: tuple | None = None, packed: bytes | None = None,
                 options: dict | None = None, **kwargs):
        if not (_STATIC / "widget.js").exists():
            raise RuntimeError(f"kernelscope's front end is not built ({_STATIC / 'widget.js'} is missing): "
                               "`pip install .` builds it, or run `npm install && npm run build` in js/")
        header, buf = model or view_model(report, options=options)
        super().__init__(**kwargs)
        self.report = report
        self.options = options    # the display options every window it fetches is shown with
        self.header = header      # the unpacked header, for Python-side use
        self._packed = packed if packed is not None else pack(header, buf)
        self.on_msg(self._on_message)

    @property
    def data(self) -> bytes:
        """The packed view model the browser gets (:func:`kernelscope.view.codec.pack`)."""
        return self._packed

    def _on_message(self, _widget, content, _buffers):
        if not isinstance(content, dict):
            return
        # A view renders: it asks for the report (once per page, the browser caches it).
        if content.get("type") == "data":
            self.send({"type": "data"}, buffers=[self._packed])
        # The browser asks for the occupancy curves of a launch shape it has none for.
        elif content.get("type") == "curves":
            entry = shape_details(self.report, int(content.get("shape", -1)))
            self.send({"type": "curves", "shape": entry["shape"], "entry": entry})
        # "Perfetto" asks for the raw Chrome trace the report was read from (or --trace wrote).
        elif content.get("type") == "trace":
            name, data, error = raw_trace_bytes(self.report)
            self.send({"type": "trace", "name": name, "error": error}, buffers=[data] if data is not None else None)
        # The window chooser asks for another part of a report too big for one view.
        elif content.get("type") == "window":
            ask = content.get("id")
            try:
                window = (content.get("from_us"), content.get("until_us"))
                if content.get("kernel") is not None:   # the next launch of a kernel chosen in the table
                    window = kernel_window(self.report, content.get("kernel"), content.get("from_us"))
                    if window is None:
                        raise LookupError("the report has no launch of that kernel")
                header, buf = view_model(self.report, window=window, options=self.options)
            except Exception as e:  # noqa: BLE001 - the view says it could not get the window
                self.send({"type": "window", "id": ask, "error": f"{type(e).__name__}: {e}"})
                return
            self.send({"type": "window", "id": ask}, [pack(header, buf)])
        # A multi-rank report's rank selector asks for one rank's full report.
        elif content.get("type") == "rank" and hasattr(self.report, "rank"):
            rank = content.get("rank")
            try:
                header, buf = view_model(self.report.rank(int(rank)))
            except Exception as e:  # noqa: BLE001 - the view says it could not open the rank
                self.send({"type": "rank", "rank": rank, "header": None, "error": f"{type(e).__name__}: {e}"})
                return
            self.send({"type": "rank", "rank": rank}, [pack(header, buf)])

    def close(self):
        """Close the widget and the layout model ipywidgets made for it (its own comm too)."""
        layout = self.layout
        super().close()
        if layout is not None:
            layout.close()

    def _repr_mimebundle_(self, **kwargs):
        _displays.shown_in_cell(self)
        return super()._repr_mimebundle_(**kwargs)

    @property
    def selected(self) -> pd.DataFrame:
        """Launch rows (``report.kernels``) of the kernels selected in the table."""
        k = getattr(self.report, "kernels", None)
        if k is None:   # a multi-rank report: its kernels are per rank (report.rank(r))
            return pd.DataFrame()
        return k[k["name"].isin(list(self.selection))]


# What "Perfetto" may send: Chrome traces only, never some other file a report's meta names.
_TRACE_SUFFIXES = (".json", ".json.gz")


def raw_trace_bytes(report) -> tuple[str | None, bytes | None, str | None]:
    """(file name, bytes, None) of the Chrome trace a report came from (``meta["raw_trace"]``:
    the file ``ks.load`` read or ``--trace`` wrote), or (name, None, why not). Only a file this
    process read or wrote is sent (:func:`kernelscope.trace.files.is_own_trace`).

    >>> raw_trace_bytes(ks.load("mlp_train.pt.trace.json.gz"))[0]
    'mlp_train.pt.trace.json.gz'
    """
    import os
    meta = getattr(report, "meta", None) or {}
    path = meta.get("raw_trace") if isinstance(meta, dict) else None
    if not isinstance(path, str) or not path:
        return None, None, "no Chrome trace was kept for this report (record with --trace PATH)"
    from kernelscope.trace.files import is_own_trace
    name = os.path.basename(path)
    if not path.lower().endswith(_TRACE_SUFFIXES) or not os.path.isfile(path):
        return name, None, f"{path} is not there any more"
    if not is_own_trace(path):
        # A report from elsewhere names a file; only one this process read or wrote is sent.
        return name, None, (f"{path} was not read or written by this kernel: open it with "
                            "ks.load first to hand it to Perfetto")
    try:
        with open(path, "rb") as f:
            return name, f.read(), None
    except OSError as e:
        return name, None, f"cannot read {path}: {e.strerror or e}"


def display_widget(report, *, model: tuple | None = None, packed: bytes | None = None,
                   options: dict | None = None) -> ReportWidget:
    """The widget for one display of ``report`` (what ``Report._repr_mimebundle_`` shows): it
    replaces, and closes, the widget of the report's previous display.

    >>> display_widget(rep)._repr_mimebundle_()       # doctest: +SKIP
    """
    w = ReportWidget(report, model=model, packed=packed, options=options)
    _displays.replace(report, w)
    return w


class _Displays:
    """Which widgets the displays of each report and each notebook cell made (weakly held:
    tracking a widget never keeps it, or its report, alive)."""

    def __init__(self):
        self.by_report = weakref.WeakKeyDictionary()   # report -> weakref to its display widget
        self.by_cell = {}                              # cell id -> WeakSet of widgets it displayed
        self.hooked = None                             # the shell whose pre_run_cell we watch

    def replace(self, report, widget):
        try:
            old = self.by_report.get(report)
            self.by_report[report] = weakref.ref(widget)
        except TypeError:   # an object that cannot be weakly referenced: nothing to track
            return
        old = old() if old is not None else None
        if old is not None and old is not widget:
            old.close()

    def shown_in_cell(self, widget):
        shell = _shell()
        if shell is None:
            return
        if self.hooked is not shell:
            shell.events.register("pre_run_cell", self.cell_runs)
            self.hooked = shell
        cell = _cell_id(shell)
        if cell is not None:
            self.by_cell.setdefault(cell, weakref.WeakSet()).add(widget)

    def cell_runs(self, info=None):
        # A cell runs again: the widgets its last run displayed have lost their output area.
        cell = getattr(info, "cell_id", None) or _cell_id(_shell())
        for w in list(self.by_cell.pop(cell, ())):
            w.close()


_displays = _Displays()


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell if shell is not None and hasattr(shell, "events") else None


def _cell_id(shell):
    """The id of the notebook cell being run, from the execute request's metadata (None outside
    a notebook front end that sends it)."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    try:
        parent = get_parent() or {}
    except Exception:  # noqa: BLE001 - no request being served (e.g. a thread): not a cell
        return None
    meta = parent.get("metadata") if isinstance(parent, dict) else None
    cell = meta.get("cellId") if isinstance(meta, dict) else None
    return cell if isinstance(cell, str) and cell else None
