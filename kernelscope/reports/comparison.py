"""Comparison: two runs side by side, with the text and HTML views a notebook shows.

The numbers come from :func:`kernelscope.analysis.diff.diff`; this class adds the displays (as
:class:`~kernelscope.Report` does for one run), so that analysis never imports a renderer.
"""
from __future__ import annotations

from kernelscope.analysis.diff import Diff, diff


class Comparison(Diff):
    """Two runs side by side: per-kernel, per-backend and overall changes (per run), each with
    the 95% interval of its change and a verdict (real / noise / inconclusive) where the runs
    were repeated, and the first run's "what to fix first" list re-measured (``c.advice``:
    fixed / partly / not, predicted against realized).

    >>> c = ks.compare(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz"))
    >>> c.kernels[["short_name", "total_before_us", "total_after_us", "ratio"]]
                            short_name  total_before_us  total_after_us   ratio
    0  elementwise add (vectorized x4)          922.825        1104.812  1.1972
    1  elementwise Mul (vectorized x4)          914.831        1095.665  1.1977
    """

    def chart(self, top: int = 20):
        """The ``top`` largest per-kernel changes as an altair chart (see :mod:`kernelscope.render.charts`).

        >>> ks.compare(before, after).chart().save(tmp / "change.html")
        """
        from kernelscope.render.charts import comparison_chart
        return comparison_chart(self, top=top)

    def __repr__(self) -> str:
        from kernelscope.render.compare import comparison_text
        return comparison_text(self)

    def _repr_html_(self) -> str:
        from kernelscope.render.compare import comparison_html
        return comparison_html(self)

    @property
    def title(self) -> str:
        """The two runs' names, first to second (their reports' titles, or ``labels``)."""
        return " → ".join(str(x) for x in self.labels)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The interactive view (our report MIME type: JupyterLab renders it with no kernel; and
        the live widget), static HTML (every row) and text, as a Report's display carries."""
        from kernelscope.render.compare import comparison_html
        from kernelscope.view.bundle import MIME_TYPE, mime_payload, with_widget
        from kernelscope.view.compare import compare_view_model
        model = compare_view_model(self)
        bundle = {MIME_TYPE: mime_payload(self, model), "text/html": comparison_html(self), "text/plain": repr(self)}
        return with_widget(bundle, lambda: self.widget(model=model))

    def widget(self, *, model=None):
        """The comparison as an interactive view (named sides, sort, filter).

        >>> ks.compare(before, after).widget()          # doctest: +SKIP
        """
        from kernelscope.view.compare import compare_view_model
        from kernelscope.view.widget import ReportWidget
        return ReportWidget(self, model=model or compare_view_model(self))


def compare(before, after, *, labels=None) -> Comparison:
    """Compare two Reports (see :func:`kernelscope.analysis.diff.diff`), as a Comparison; its
    display shows the totals, the first run's advice re-measured, and every kernel.

    >>> compare(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz"))
    kernelscope comparison: launch_bound.pt.trace.json.gz -> graphs.pt.trace.json.gz
      GPU kernel time       1.84 ms ->    2.20 ms     +362.8 us   x1.20
      copy/memset time       0.0 us ->     0.0 us       ±0.0 us       –
      GPU busy (union)      1.84 ms ->    2.20 ms     +362.8 us   x1.20
      GPU active window    25.77 ms ->    2.37 ms     -23.40 ms   x0.09
      wall time            28.49 ms ->    5.50 ms     -22.99 ms   x0.19
    ...
    """
    return Comparison(**vars(diff(before, after, labels=labels)))
