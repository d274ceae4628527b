"""Comparison: two runs side by side, with the text and HTML views a notebook shows.

The numbers come from :func:`kernelscope.analysis.diff.diff`; this class adds the displays (as
:class:`~kernelscope.Report` does for one run), so that analysis never imports a renderer.
"""
from __future__ import annotations

from .analysis.diff import Diff, diff


class Comparison(Diff):
    """Two runs side by side: per-kernel, per-backend and overall changes (per run).

    >>> c = ks.compare(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz"))  # doctest: +SKIP
    >>> c.kernels[["short_name", "total_before_us", "total_after_us", "ratio"]]                      # doctest: +SKIP
    """

    def chart(self, top: int = 20):
        """The ``top`` largest per-kernel changes as an altair chart (see :mod:`kernelscope.render.charts`).

        >>> ks.compare(before, after).chart().save("change.svg")   # doctest: +SKIP
        """
        from .render.charts import comparison_chart
        return comparison_chart(self, top=top)

    def __repr__(self) -> str:
        from .render.compare import comparison_text
        return comparison_text(self)

    def _repr_html_(self) -> str:
        from .render.compare import comparison_html
        return comparison_html(self)


def compare(before, after, *, labels=None) -> Comparison:
    """Compare two Reports (see :func:`kernelscope.analysis.diff.diff`), as a Comparison.

    >>> compare(ks.load("launch_bound.pt.trace.json.gz"), ks.load("graphs.pt.trace.json.gz"))  # doctest: +SKIP
    """
    return Comparison(**vars(diff(before, after, labels=labels)))
