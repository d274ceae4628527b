"""A progress bar for loads that take more than a couple of seconds.

In a notebook it is an ipywidgets bar under the cell, on a terminal one line on stderr; a load
that looks like ending within ``KERNELSCOPE_PROGRESS`` seconds (2 by default; 0 always shows the
bar, ``off`` never) draws nothing, and the bar is removed once the load is done (or fails). The
reader reports the bytes it has read (``progress(done, total)``), so the bar shows a share of the
file and an estimate of the time left. Output that is neither a notebook nor a terminal (a log
file, a pipe) gets nothing.
"""
from __future__ import annotations

import os
import sys
import time
from html import escape

ENV = "KERNELSCOPE_PROGRESS"
DEFAULT_S = 2.0
REDRAW_S = 0.1       # at most this often: a notebook bar costs a message per redraw
WIDTH = 30           # characters of a terminal bar


def threshold_s() -> float | None:
    """Seconds a load must look like taking for a bar to appear (``$KERNELSCOPE_PROGRESS``,
    default 2); None: never.

    >>> threshold_s() if "KERNELSCOPE_PROGRESS" not in os.environ else 2.0
    2.0
    """
    v = os.environ.get(ENV, "").strip().lower()
    if not v:
        return DEFAULT_S
    if v in ("off", "no", "false", "never"):
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        return DEFAULT_S


class LoadProgress:
    """``with LoadProgress("trace.json") as bar: read(progress=bar.update)``: a bar once the
    load looks long (see the module), gone when the block ends.

    >>> with LoadProgress("t.json", out=None) as bar:
    ...     bar.update(50, 100)
    >>> bar.shown
    False
    """

    def __init__(self, label: str, *, clock=time.monotonic, out="auto"):
        self.label = label
        self.clock = clock
        self.start = clock()
        self.after = threshold_s()
        self._out = out          # "auto": a notebook or a terminal if there is one; None: nowhere
        self._view: _WidgetView | _TextView | None = None
        self._last = -1.0
        self.shown = False
        self.done = self.total = 0
        self.stage_text = "reading"

    # -- what the reader calls -----------------------------------------------------------------
    def update(self, done: int, total: int) -> None:
        """``done`` of ``total`` bytes read."""
        self.done, self.total = done, total
        if total and done >= total:
            self.stage_text = "building tables"
        self._maybe_draw()

    def stage(self, text: str) -> None:
        """A step after reading (no share to show, the bar says what is going on)."""
        self.stage_text = text
        self._maybe_draw(force=True)

    def close(self) -> None:
        """Remove the bar (if it was drawn)."""
        if self._view is not None:
            self._view.close()
            self._view = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- drawing ---------------------------------------------------------------------------------
    def _maybe_draw(self, force=False) -> None:
        if self.after is None or self._out is None:
            return
        now = self.clock()
        elapsed = now - self.start
        if not self.shown:
            share = self.done / self.total if self.total else 0.0
            # Expected length of the whole load from how far reading has got (reading is most
            # of it); wait a little before guessing, unless every load gets a bar.
            if elapsed < min(1.0, self.after / 2):
                return
            expected = elapsed / share if share > 0 else float("inf")
            if expected < self.after and not (force and elapsed >= self.after):
                return
            self._view = _open_view(self._out, self.label)
            if self._view is None:
                self.after = None      # nowhere to draw: stop asking
                return
            self.shown = True
        elif not force and now - self._last < REDRAW_S:
            return
        self._last = now
        self._view.draw(self.done, self.total, self.stage_text, elapsed)


def _open_view(out, label):
    if out == "auto":
        if _in_notebook():
            try:
                return _WidgetView(label)
            except ImportError:
                return None
        out = sys.stderr
        if not (hasattr(out, "isatty") and out.isatty()):
            return None
    return _TextView(out, label)


def _in_notebook() -> bool:
    # Only a running IPython kernel has a notebook to draw in; IPython is never imported here.
    ip = sys.modules.get("IPython")
    shell = ip.get_ipython() if ip is not None and hasattr(ip, "get_ipython") else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _fmt_mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 10e6 else f"{n / 1e6:.1f} MB"


def describe(done: int, total: int, stage: str, elapsed: float) -> str:
    """The bar's text: what is going on, how much is read, the time so far and the time left.

    >>> describe(50_000_000, 200_000_000, "reading", 3.0)
    'reading 50 of 200 MB, 3.0 s, about 9.0 s left'
    """
    if stage != "reading" or not total:
        return f"{stage}, {_fmt_s(elapsed)}"
    left = elapsed * (total - done) / done if done else None
    return (f"reading {_fmt_mb(done).replace(' MB', '')} of {_fmt_mb(total)}, {_fmt_s(elapsed)}"
            + ("" if left is None else ", under 1 s left" if left < 1 else f", about {_fmt_s(left)} left"))


def _fmt_s(s: float) -> str:
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


class _TextView:
    """One line on a terminal, redrawn in place and erased at the end."""

    def __init__(self, out, label):
        self.out = out
        self.label = label

    def draw(self, done, total, stage, elapsed):
        share = min(1.0, done / total) if total else 0.0
        fill = round(share * WIDTH)
        self.out.write(f"\r\x1b[K{self.label} [{'#' * fill}{'.' * (WIDTH - fill)}] {share:4.0%} "
                       f"{describe(done, total, stage, elapsed)}")
        self.out.flush()

    def close(self):
        self.out.write("\r\x1b[K")
        self.out.flush()


class _WidgetView:
    """An ipywidgets bar under the running cell, closed (and its output cleared) at the end."""

    def __init__(self, label):
        import ipywidgets
        from IPython.display import display
        self.bar = ipywidgets.FloatProgress(value=0.0, min=0.0, max=1.0, layout={"width": "240px"})
        self.text = ipywidgets.HTML()
        self.name = escape(label)
        self.widgets = [ipywidgets.HTML(f"<b>{self.name}</b>&nbsp;"), self.bar, self.text]
        self.box = ipywidgets.HBox(self.widgets)
        self.handle = display(self.box, display_id=True)

    def draw(self, done, total, stage, elapsed):
        self.bar.value = min(1.0, done / total) if total else 0.0
        self.bar.bar_style = "" if stage == "reading" else "info"
        self.text.value = "&nbsp;" + escape(describe(done, total, stage, elapsed))

    def close(self):
        # Every model the bar made goes (their layouts and styles are models of their own too).
        for w in (self.box, *self.widgets):
            for part in (getattr(w, "layout", None), getattr(w, "style", None), w):
                if part is not None:
                    part.close()
        if self.handle is not None:
            # The output the bar was displayed in is emptied too, not left as a closed widget.
            self.handle.update({"text/plain": ""}, raw=True)
