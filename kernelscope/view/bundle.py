"""The one MIME bundle every result object displays as: text/plain, static HTML, the
``application/vnd.kernelscope.report.v1+json`` entry a saved notebook renders without a kernel,
and the live widget where one can be built."""
from __future__ import annotations

import base64

from kernelscope.view.codec import PAYLOAD_FORMAT, pack
from kernelscope.view.report import view_model

MIME_TYPE = "application/vnd.kernelscope.report.v1+json"


def report_bundle(rep, options: dict | None = None) -> dict:
    """Everything one display of a Report shows, each part formatting the same panels
    (``kernelscope.panels``): the saved-notebook entry, static HTML, text and the live widget.
    ``options``: the display options (``top``: kernels listed; ``sort``: the table's order).

    >>> [k for k in sorted(report_bundle(rep, {"top": 3, "sort": None})) if "kernelscope" in k or "text" in k]
    ['application/vnd.kernelscope.report.v1+json', 'text/html', 'text/plain']
    >>> report_bundle(rep, {"top": 3})["text/plain"].count(" ATen ")
    3
    """
    from kernelscope.render.html import report_html
    from kernelscope.render.text import report_text
    top = (options or {}).get("top")
    model = view_model(rep, options=options)
    packed = pack(*model)   # one blob for both the saved MIME entry and the widget
    bundle = {MIME_TYPE: mime_payload(rep, packed=packed), "text/html": report_html(rep, top=top),
              "text/plain": report_text(rep, top=top)}

    def make_widget():
        from kernelscope.view.widget import display_widget
        return display_widget(rep, model=model, packed=packed, options=options)
    return with_widget(bundle, make_widget)



def with_widget(bundle: dict, make_widget) -> dict:
    """``bundle`` (a display's MIME entries) plus the live widget's, when ``make_widget()`` can
    build one: without ipywidgets or a kernel the other entries still render.

    >>> with_widget({"text/plain": "r"}, lambda: 1 / 0)
    {'text/plain': 'r'}
    """
    try:
        view = make_widget()._repr_mimebundle_()
    except Exception:  # noqa: BLE001 - no widget machinery here: the other types still render
        view = None
    if view:
        data = view[0] if isinstance(view, tuple) else view
        bundle.update({k: v for k, v in data.items() if k != "text/plain"})
    return bundle


def mime_payload(rep, model: tuple | None = None, packed: bytes | None = None) -> dict:
    """The JSON-able MIME bundle entry for ``application/vnd.kernelscope.report.v1+json``
    (``model``: a :func:`view_model` result already computed for ``rep``; ``packed``: its
    :func:`pack` blob, when already made for the widget).

    >>> mime_payload(rep)["encoding"]
    'gzip+base64'
    """
    if packed is None:
        packed = pack(*(model or view_model(rep)))
    return {"format": PAYLOAD_FORMAT, "encoding": "gzip+base64", "data": base64.b64encode(packed).decode("ascii")}
