"""The anywidget view of a Report (kept apart from the user API, as jupyter-scatter does).

The browser gets the report's view model (``kernelscope.render.view``): a JSON header and one
binary buffer of typed-array columns. The browser writes back ``selection`` (kernel names), and
:attr:`ReportWidget.selected` turns it into the matching launch rows.
"""
from __future__ import annotations

import pathlib

import anywidget
import pandas as pd
import traitlets

from .render.view import config_curves, view_model

_STATIC = pathlib.Path(__file__).parent / "static"


class ReportWidget(anywidget.AnyWidget):
    """Interactive report: kernel table, timeline, backends, occupancy, roofline, findings.

    >>> w = ReportWidget(ks.load("mlp_train.pt.trace.json.gz"))   # doctest: +SKIP
    >>> w                                                        # doctest: +SKIP
    >>> w.selected            # the launches of the kernels selected in the table  # doctest: +SKIP
    """

    _esm = _STATIC / "widget.js"
    _css = _STATIC / "widget.css"

    header = traitlets.Dict().tag(sync=True)
    data = traitlets.Bytes().tag(sync=True)
    selection = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(self, report, *, model: tuple | None = None, **kwargs):
        if not (_STATIC / "widget.js").exists():
            raise RuntimeError(f"kernelscope's front end is not built ({_STATIC / 'widget.js'} is missing): "
                               "`pip install .` builds it, or run `npm install && npm run build` in js/")
        header, buf = model or view_model(report)
        self.report = report
        super().__init__(header=header, data=buf, **kwargs)
        self.on_msg(self._on_message)

    def _on_message(self, _widget, content, _buffers):
        # The browser asks for the occupancy curves of a launch shape it has none for.
        if isinstance(content, dict) and content.get("type") == "curves":
            entry = config_curves(self.report, int(content.get("config", -1)))
            self.send({"type": "curves", "config": entry["config"], "entry": entry})
        # A multi-rank report's rank selector asks for one rank's full report.
        if isinstance(content, dict) and content.get("type") == "rank" and hasattr(self.report, "rank"):
            rank = content.get("rank")
            try:
                header, buf = view_model(self.report.rank(int(rank)))
            except Exception as e:  # noqa: BLE001 - the view says it could not open the rank
                self.send({"type": "rank", "rank": rank, "header": None, "error": f"{type(e).__name__}: {e}"})
                return
            self.send({"type": "rank", "rank": rank, "header": header}, [buf])

    @property
    def selected(self) -> pd.DataFrame:
        """Launch rows (``report.kernels``) of the kernels selected in the table."""
        k = getattr(self.report, "kernels", None)
        if k is None:   # a multi-rank report: its kernels are per rank (report.rank(r))
            return pd.DataFrame()
        return k[k["name"].isin(list(self.selection))]
