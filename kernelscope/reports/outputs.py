"""What a report shows itself as: text, static HTML, Jupyter's display bundle, the first screen
as data or Markdown, charts and the widget (each output formats the report's panels; nothing is
computed here). :class:`~kernelscope.reports.report.Report` takes these methods from
:class:`ReportOutputs`.
"""
from __future__ import annotations


class ReportOutputs:
    """The output methods of a Report."""

    def __repr__(self) -> str:
        from kernelscope.render.text import report_text
        return report_text(self)

    def _repr_html_(self) -> str:
        from kernelscope.render.html import report_html
        return report_html(self)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """Every display carries the live widget (needs a kernel), our report MIME type (the
        JupyterLab extension renders it from a saved notebook with no kernel), static HTML
        (GitHub, nbconvert) and text."""
        from kernelscope.view.bundle import report_bundle
        return report_bundle(self)

    def first_screen(self, top: int = 5) -> dict:
        """The first screen as plain, JSON-ready data, for a script or an agent: the headline
        figures, what to fix first (time at stake, cause, fix) and the ``top`` costliest kernels.

        >>> rep.first_screen()["fixes"][0]["title"][:11]
        'Host-bound:'
        """
        from kernelscope.render.markdown import first_screen
        return first_screen(self, top)

    def to_markdown(self, top: int = 5) -> str:
        r"""The first screen as Markdown (headline, what to fix first, the ``top`` costliest
        kernels), for a chat, an issue or an agent.

        >>> print(rep.to_markdown().splitlines()[0])
        # kernelscope: mlp\_train.pt.trace.json.gz
        """
        from kernelscope.render.markdown import report_markdown
        return report_markdown(self, top)

    def display(self, *, top: int | None = None, sort: str | None = None) -> ReportDisplay:
        """The report with display options, for ``display()`` or a cell's last line: ``top``,
        the kernels listed (the table offers the rest); ``sort``, the kernel table's order (a
        column: ``"total"``, ``"launches"``, ``"mean"``, ...). ``%%kernelprofile --top N
        --sort COL`` shows its report this way.

        >>> repr(rep.display(top=2)).count(" ATen "), repr(rep).count(" ATen ")
        (2, 9)
        """
        return ReportDisplay(self, {"top": top, "sort": sort})

    def chart(self, kind: str = "kernels", *, kernel: str | None = None, top: int = 20):
        """A chart of the report as an altair object, to restyle or save (PNG/SVG need vl-convert):
        ``"backends"`` (GPU time per backend), ``"kernels"`` (the ``top`` costliest), ``"timeline"``
        (launches and copies per stream, idle gaps), ``"steps"`` (a loop's steps, ``rep.steps``),
        ``"memory"`` (allocated and reserved over time) or ``"occupancy"`` (theoretical occupancy as
        block size, registers and shared memory vary, for ``kernel``: a name, short name or part of
        one; the costliest kernel by default). Shown offline in JupyterLab, Notebook 7 and VS Code
        (see :mod:`kernelscope.render.charts`).

        >>> rep.chart("occupancy", kernel="nvjet").save(tmp / "occupancy.html")
        """
        from kernelscope.render.charts import report_chart
        return report_chart(self, kind, kernel=kernel, top=top)

    def widget(self):
        """The interactive view as an anywidget; ``w.selected`` is what is selected in its table.

        >>> w = rep.widget(); w                          # doctest: +SKIP
        >>> w.selected                                  # doctest: +SKIP
        """
        from kernelscope.view.widget import ReportWidget
        return ReportWidget(self)


class ReportDisplay:
    """One display of a report with its display options (:meth:`Report.display`): shown as the
    report is, the options applied to every output (text, static HTML, the view)."""

    def __init__(self, report, options: dict):
        self.report = report
        self.options = options

    def __repr__(self) -> str:
        from kernelscope.render.text import report_text
        return report_text(self.report, top=self.options.get("top"))

    def _repr_html_(self) -> str:
        from kernelscope.render.html import report_html
        return report_html(self.report, top=self.options.get("top"))

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        from kernelscope.view.bundle import report_bundle
        return report_bundle(self.report, self.options)
