"""Jupyter server extension: ``GET /kernelscope/report?path=...`` reads a trace or report file
(relative to the server's root) and answers with the report's MIME payload, so JupyterLab can
open ``.pt.trace.json(.gz)`` and ``.ksreport.json(.gz)`` files in a tab without a kernel.

Parsing happens here, in the server, because opening a file should not start a kernel (the
kernel may also run in an environment without kernelscope), and because the reader is Python:
the browser would otherwise need a second Kineto parser. Enabled by
``etc/jupyter/jupyter_server_config.d/kernelscope.json``, which the wheel installs.
"""
from __future__ import annotations

import asyncio
import json
import os
import re


def _jupyter_server_extension_points():
    """Entry point for jupyter_server (the config enables ``kernelscope.jupyter.server``)."""
    return [{"module": "kernelscope.jupyter.server"}]


def _load_jupyter_server_extension(serverapp):
    from jupyter_server.utils import url_path_join
    web_app = serverapp.web_app
    route = url_path_join(web_app.settings["base_url"], "kernelscope", "report")
    web_app.add_handlers(".*$", [(route, _handler_class())])
    # The lab extension opens these files with the route (its file type's pattern comes from here).
    web_app.settings.setdefault("page_config_data", {})[PAGE_CONFIG_KEY] = file_pattern()
    serverapp.log.info("kernelscope: serving reports at %s", route)


PAGE_CONFIG_KEY = "kernelscopeFiles"


def file_pattern() -> str:
    """The file names JupyterLab opens as report tabs: Kineto traces, saved reports, JAX's
    perfetto traces, Nsight Compute reports (compressed too), as a regular expression on the
    name, given to the lab extension in JupyterLab's page config.

    >>> bool(re.search(file_pattern(), "run.ncu-rep.xz")), bool(re.search(file_pattern(), "notes.json"))
    (True, False)
    """
    from kernelscope.loading import TRACE_SUFFIXES
    from kernelscope.trace.ncu.report import REPORT_SUFFIXES
    from kernelscope.trace.perfetto import FILE_NAMES
    ends = sorted({s.lstrip(".") for s in (*TRACE_SUFFIXES, *REPORT_SUFFIXES, *FILE_NAMES)}, key=lambda s: (-len(s), s))
    return r"(^|\.)(" + "|".join(re.escape(s) for s in ends) + ")$"


def report_payload(os_path: str, display_path: str | None = None) -> dict:
    """The MIME payload of a trace or report file (what the handler answers).

    >>> from kernelscope.view.codec import read_payload
    >>> read_payload(report_payload("attention.pt.trace.json.gz"))[0]["title"]
    'attention.pt.trace.json.gz'
    """
    from kernelscope import load
    from kernelscope.view.bundle import mime_payload
    from kernelscope.view.report import view_model
    rep = load(os_path)
    header, buf = view_model(rep)
    if display_path:
        header["title"] = os.path.basename(display_path)
    return mime_payload(rep, (header, buf))


def _handler_class():
    # jupyter_server and tornado are imported only when the server loads the extension.
    from jupyter_server.base.handlers import APIHandler
    from tornado import web

    from kernelscope.errors import TraceError

    class ReportHandler(APIHandler):
        @web.authenticated
        async def get(self):
            path = self.get_query_argument("path", "")
            if not path:
                raise web.HTTPError(400, "give ?path= of a trace or report file")
            cm = self.contents_manager
            get_os_path = getattr(cm, "_get_os_path", None)
            if get_os_path is None:  # a contents manager not backed by files
                raise web.HTTPError(501, "kernelscope reads files from a file-system contents manager only")
            os_path = get_os_path(path.strip("/"))  # 404 for paths outside the root
            if not os.path.isfile(os_path):
                raise web.HTTPError(404, f"{path}: no such file")
            loop = asyncio.get_running_loop()
            try:
                payload = await loop.run_in_executor(None, report_payload, os_path, path)
            except TraceError as e:
                # Name the file as the user knows it, not the server's absolute path.
                raise web.HTTPError(400, f"{path}: {e.problem}") from None
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(payload))

    return ReportHandler
