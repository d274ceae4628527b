"""The one MIME bundle every result object displays as: text/plain, static HTML, the
``application/vnd.kernelscope.report.v1+json`` entry a saved notebook renders without a kernel,
and the live widget where one can be built."""
from __future__ import annotations

import base64

from kernelscope.view.codec import PAYLOAD_FORMAT, pack
from kernelscope.view.report import view_model

MIME_TYPE = "application/vnd.kernelscope.report.v1+json"



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
