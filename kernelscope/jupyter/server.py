"""Jupyter server extension: ``GET /kernelscope/report?path=...`` reads a trace or report file
(relative to the server's root) and answers with the report's MIME payload, so JupyterLab can
open ``.pt.trace.json(.gz)`` and ``.ksreport.json(.gz)`` files in a tab without a kernel;
``&window=1&from_us=...&until_us=...`` answers with another window of a trace too big for one
view (the report stays read while the file is unchanged).

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
import threading
from pathlib import Path


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


# Reports read lately, kept so that choosing another window of a big trace does not read the
# file again: (path, modification time, size) -> Report, the latest last. Two, for two tabs.
_KEEP_REPORTS = 2
_reports: dict = {}
_reports_lock = threading.Lock()


def _report(os_path: str):
    """The report of a file, read once while the file is unchanged (the last few are kept)."""
    from kernelscope import load
    st = Path(os_path).stat()
    key = (os_path, st.st_mtime_ns, st.st_size)
    with _reports_lock:
        rep = _reports.pop(key, None)
    if rep is None:
        rep = load(os_path, progress=False)
    with _reports_lock:
        _reports[key] = rep
        while len(_reports) > _KEEP_REPORTS:
            _reports.pop(next(iter(_reports)))
    return rep


PAGE_CONFIG_KEY = "kernelscopeFiles"


def file_pattern() -> str:
    """The file names JupyterLab opens as report tabs: Kineto traces, saved reports, JAX's
    perfetto traces, Nsight Compute reports (compressed too), ONNX Runtime profiles (named as
    ONNX Runtime names them, ``onnxruntime_profile_<date>.json``), as a regular expression on the
    name, given to the lab extension in JupyterLab's page config.

    >>> bool(re.search(file_pattern(), "run.ncu-rep.xz")), bool(re.search(file_pattern(), "notes.json"))
    (True, False)
    >>> bool(re.search(file_pattern(), "onnxruntime_profile__2026-12-04_00-17-03.json"))
    True
    """
    from kernelscope.loading import TRACE_SUFFIXES
    from kernelscope.trace.ncu.report import REPORT_SUFFIXES
    from kernelscope.trace.onnxruntime import FILE_PREFIX
    from kernelscope.trace.perfetto import FILE_NAMES
    ends = sorted({s.lstrip(".") for s in (*TRACE_SUFFIXES, *REPORT_SUFFIXES, *FILE_NAMES)}, key=lambda s: (-len(s), s))
    return (r"(^|\.)(" + "|".join(re.escape(s) for s in ends) + ")$"
            + r"|(^|[._])" + re.escape(FILE_PREFIX) + r"[^/]*\.json(\.gz)?$")


def report_payload(os_path: str, display_path: str | None = None, window: tuple | dict | None = None) -> dict:
    """The MIME payload of a trace or report file (what the handler answers); ``window``:
    ``(from_us, until_us)`` of a trace too big for one view (``view_model``'s ``window``), or
    ``{"kernel": name, "after_us": t}``: from the next launch of that kernel.

    >>> from kernelscope.view.codec import read_payload
    >>> read_payload(report_payload("attention.pt.trace.json.gz"))[0]["title"]
    'attention.pt.trace.json.gz'
    """
    from kernelscope.errors import TraceError
    from kernelscope.view.bundle import mime_payload
    from kernelscope.view.report import kernel_window, view_model
    rep = _report(os_path)
    if isinstance(window, dict):
        window = kernel_window(rep, window.get("kernel"), window.get("after_us"))
        if window is None:
            raise TraceError(os_path, "the report has no launch of that kernel")
    header, buf = view_model(rep, window=window)
    if display_path:
        header["title"] = Path(display_path).name
    return mime_payload(rep, (header, buf))


def _query_us(text: str):
    """A time in microseconds from the query string (None when empty or not a finite number)."""
    try:
        v = float(text)
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def _handler_class():
    # jupyter_server and tornado are imported only when the server loads the extension.
    from jupyter_server.auth.decorator import authorized
    from jupyter_server.base.handlers import APIHandler
    from jupyter_server.utils import ensure_async
    from tornado import web

    from kernelscope.errors import TraceError

    class ReportHandler(APIHandler):
        # Reading a report is reading a file of the contents root: the authorizer is asked
        # for "read" on "contents", as for /api/contents and /files.
        auth_resource = "contents"

        @web.authenticated
        @authorized
        async def get(self):
            path = self.get_query_argument("path", "")
            if not path:
                raise web.HTTPError(400, "give ?path= of a trace or report file")
            cm = self.contents_manager
            get_os_path = getattr(cm, "_get_os_path", None)
            if get_os_path is None:  # a contents manager not backed by files
                raise web.HTTPError(501, "kernelscope reads files from a file-system contents manager only")
            path = path.strip("/")
            os_path = get_os_path(path)  # 404 for paths outside the root
            if not cm.allow_hidden and await ensure_async(cm.is_hidden(path)):
                raise web.HTTPError(404, f"{path}: no such file")   # as the contents API answers
            if not _inside(os_path, cm.root_dir):
                raise web.HTTPError(403, f"{path} is not in the root directory")   # as /files answers
            if not os.path.isfile(os_path):
                raise web.HTTPError(404, f"{path}: no such file")
            window = None
            if self.get_query_argument("window", ""):   # the window chooser: ?window=1&from_us=&until_us=
                window = tuple(_query_us(self.get_query_argument(k, "")) for k in ("from_us", "until_us"))
                kernel = self.get_query_argument("kernel", "")
                if kernel:      # &kernel=NAME: from the next launch of that kernel after from_us
                    window = {"kernel": kernel, "after_us": window[0]}
            loop = asyncio.get_running_loop()
            try:
                payload = await loop.run_in_executor(None, report_payload, os_path, path, window)
            except TraceError as e:
                # Name the file as the user knows it, not the server's absolute path.
                raise web.HTTPError(400, f"{path}: {e.problem}") from None
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(payload))

    return ReportHandler


def _inside(os_path: str, root: str) -> bool:
    """Whether the file, symlinks followed, lies under the root (a link out of it is refused)."""
    real, top = os.path.realpath(os_path), os.path.realpath(root)
    return os.path.commonpath([real, top]) == top
