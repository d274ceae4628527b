"""The anywidget view of a Report (kept apart from the user API, as jupyter-scatter does).

The browser asks for the report's view model (``kernelscope.view.report``: the JSON header and
the typed-array columns, packed and gzipped) with a custom message when a view first renders,
and gets it back as one binary buffer. It is not a synced trait on purpose: the widget's state is
saved into the notebook with every displayed report (nbclient, nbconvert --execute, papermill,
JupyterLab's "Save Widget State Automatically"), while the same data is already in the output's
own MIME entry, which renders it with no kernel. The browser writes back ``selection`` (kernel
names), and :attr:`ReportWidget.selected` turns it into the matching launch rows.

Every request of the view (js/src/channel.js) is a custom message with an ``id`` and a ``kind``
(:class:`Request`): ``data`` (the report), ``curves`` (a launch shape's occupancy curves the
payload lacks), ``trace`` (the raw Chrome trace, for Perfetto), ``window`` (another part of a
report too big for one view: ``from_us``, ``until_us``, or ``kernel``: from the next launch of
that kernel after ``from_us``) and ``rank`` (one rank's full report). :func:`answer` picks the
handler of the kind (:data:`HANDLERS`) and sends one :class:`Reply` that echoes the id and kind,
an ``error`` one where the request does not read or its handler raises.

Lifecycle: every open widget lives in the kernel, in the front end's widget manager and (when
widget state is saved) in the notebook file, so kernelscope closes the ones nobody can see any
more: a report displayed again replaces its earlier display widget, and a cell that runs again
closes the widgets its previous run displayed (the cell is known by the ``cellId`` JupyterLab,
Notebook 7 and VS Code send with each execution).
"""
from __future__ import annotations

import pathlib
import weakref
from collections.abc import Callable
from typing import Any, TypedDict, cast

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
        # Every request of the view gets exactly one reply, an error one at worst (answer()).
        reply, buffers = answer(self, content)
        self.send(reply, buffers=buffers or None)

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
    name = os.path.basename(path)  # noqa: PTH119 - meta text, named as panels/header.py names it
    if not path.lower().endswith(_TRACE_SUFFIXES) or not os.path.isfile(path):
        return name, None, f"{path} is not there any more"
    if not is_own_trace(path):
        # A report from elsewhere names a file; only one this process read or wrote is sent.
        return name, None, (f"{path} was not read or written by this kernel: open it with "
                            "ks.load first to hand it to Perfetto")
    try:
        return name, pathlib.Path(path).read_bytes(), None
    except OSError as e:
        return name, None, f"cannot read {path}: {e.strerror or e}"


# The view's requests and Python's replies (js/src/channel.js sends them, js/src/widget.js asks):
# every request carries an id and a kind, and gets exactly one reply that echoes both; a reply
# with `error` is a request that failed (the view's promise rejects with that text).

class Envelope(TypedDict):
    """What every request and every reply carries: the view's id for the request and its kind
    (None in a reply where the request's own was missing or not a string or integer)."""
    id: str | int | None
    kind: str | None


class Request(Envelope, total=False):
    """A request of the view, by kind: ``data`` (the packed report), ``curves`` (``shape``: a
    launch shape code), ``trace`` (the raw Chrome trace), ``window`` (``from_us``, ``until_us``:
    numbers or null; ``kernel``: a kernel name or null: from its next launch after ``from_us``),
    ``rank`` (``rank``: a rank of a multi-rank report)."""
    shape: int
    from_us: float | None
    until_us: float | None
    kernel: str | None
    rank: int


class Reply(Envelope, total=False):
    """A reply: ``error`` (why the request failed; no buffer then), or what its kind gives:
    ``entry`` (curves: :func:`kernelscope.panels.shapes.shape_details`), ``name`` (trace: the
    file's name), ``rank``. The packed report (data, window, rank) or the trace's bytes travel as
    the reply's one buffer."""
    error: str
    entry: dict
    name: str | None
    rank: int


class BadRequest(ValueError):
    """A request that does not read as its kind says (a field missing or of the wrong type)."""


def _what(req: dict, key: str) -> str:
    return "missing" if key not in req else type(req[key]).__name__


def _int(req: dict, key: str) -> int:
    """The request's integer field ``key``, or BadRequest: checked, not read with
    :func:`kernelscope.jsonable.whole`, as the browser sends JSON numbers (another type is its bug)."""
    v = req.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(f"{key!r} must be an integer, not {_what(req, key)}")
    return v


def _number_or_none(req: dict, key: str) -> float | None:
    """The request's number field ``key`` (or null) as sent, or BadRequest: a check, as :func:`_int`."""
    v = req.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
        raise BadRequest(f"{key!r} must be a number or null, not {_what(req, key)}")
    return v


def _text_or_none(req: dict, key: str) -> str | None:
    v = req.get(key)
    if v is not None and not isinstance(v, str):
        raise BadRequest(f"{key!r} must be a string or null, not {_what(req, key)}")
    return v


# Each handler: (widget, request) -> (reply fields, buffers); answer() adds the id and kind.
Handler = Callable[["ReportWidget", dict], "tuple[dict[str, Any], list[bytes]]"]


def _data(w: ReportWidget, req: dict) -> tuple[dict[str, Any], list[bytes]]:
    # A view renders: it asks for the report (once per page, the browser caches it).
    return {}, [w.data]


def _curves(w: ReportWidget, req: dict) -> tuple[dict[str, Any], list[bytes]]:
    # The occupancy curves of a launch shape the payload holds none for.
    return {"entry": shape_details(w.report, _int(req, "shape"))}, []


def _trace(w: ReportWidget, req: dict) -> tuple[dict[str, Any], list[bytes]]:
    # "Perfetto": the raw Chrome trace the report was read from (or --trace wrote).
    name, data, why = raw_trace_bytes(w.report)
    if data is None:
        return {"name": name, "error": why}, []
    return {"name": name}, [data]


def _window(w: ReportWidget, req: dict) -> tuple[dict[str, Any], list[bytes]]:
    # The window chooser: another part of a report too big for one view.
    from_us, until_us = _number_or_none(req, "from_us"), _number_or_none(req, "until_us")
    kernel = _text_or_none(req, "kernel")
    window = (from_us, until_us)
    if kernel is not None:   # from the next launch of a kernel chosen in the table
        window = kernel_window(w.report, kernel, from_us)
        if window is None:
            raise LookupError("the report has no launch of that kernel")
    return {}, [pack(*view_model(w.report, window=window, options=w.options))]


def _rank(w: ReportWidget, req: dict) -> tuple[dict[str, Any], list[bytes]]:
    # A multi-rank report's rank selector: one rank's full report.
    rank = _int(req, "rank")
    if not hasattr(w.report, "rank"):
        raise BadRequest("this report has no ranks")
    return {"rank": rank}, [pack(*view_model(w.report.rank(rank)))]


HANDLERS: dict[str, Handler] = {"data": _data, "curves": _curves, "trace": _trace, "window": _window, "rank": _rank}


def answer(widget: ReportWidget, content: Any) -> tuple[Reply, list[bytes]]:
    """The reply to one request of the widget's view, and its buffers: the handler of the
    request's kind (:data:`HANDLERS`) answers; a request that does not read (not an object, no
    id, an unknown kind, a field of the wrong type) or a handler that raises gets an ``error``
    reply, so the view always hears back and the kernel never sees an exception.

    >>> w = ReportWidget(rep)
    >>> answer(w, {"id": "v1", "kind": "curves", "shape": 0})[0]["entry"]["curves"]["block"][:2]
    [[32, 0.5], [64, 1.0]]
    >>> answer(w, {"id": "v2", "kind": "curves", "shape": [0]})
    ({'id': 'v2', 'kind': 'curves', 'error': "bad request: 'shape' must be an integer, not list"}, [])
    >>> answer(w, {"id": "v3", "kind": "rank", "rank": 1})[0]["error"]
    'bad request: this report has no ranks'
    """
    req = content if isinstance(content, dict) else {}
    rid, kind = req.get("id"), req.get("kind")
    envelope: Envelope = {"id": rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None,
                          "kind": kind if isinstance(kind, str) else None}
    try:
        if not isinstance(content, dict):
            raise BadRequest(f"a request is an object, not {type(content).__name__}")
        if envelope["id"] is None:
            raise BadRequest(f"'id' must be a string or an integer, not {_what(req, 'id')}")
        handler = HANDLERS.get(envelope["kind"] or "")
        if handler is None:
            raise BadRequest(f"unknown kind {kind!r} (known: {', '.join(HANDLERS)})")
        body, buffers = handler(widget, req)
    except BadRequest as e:
        return cast(Reply, {**envelope, "error": f"bad request: {e}"}), []
    except Exception as e:  # noqa: BLE001 - the view says what failed; the kernel keeps serving it
        return cast(Reply, {**envelope, "error": f"{type(e).__name__}: {e}"}), []
    return cast(Reply, {**body, **envelope}), list(buffers)


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
