"""No input text is ever interpreted as markup, checked in a real browser (Debian chromium).

Kernel names, op names, the device name, the trace name and the file name of
``tests/corpus/script_kernel_names.json`` carry script payloads: ``<script>``, ``<img onerror>``,
``<svg onload>``, ``</textarea>``, quotes. Each payload would set ``window.__ks_pwned`` or open an
alert if it ever ran. They are shown by every view a user meets: the static ``text/html``
fallback, the report MIME renderer in a saved notebook with no kernel, the live widget, and
JupyterLab's trace-file viewer. In each we assert that nothing ran and that the names are
shown, as text.
"""
from __future__ import annotations

import shutil
import urllib.parse

import nbformat
import pytest
from conftest import ARTIFACTS
from nbclient import NotebookClient
from test_widget_browser import run_cell, wait_idle

import kernelscope as ks

pytestmark = pytest.mark.browser

CORPUS = ARTIFACTS.parent.parent / "corpus"
HOSTILE = CORPUS / "script_kernel_names.json"
# A file name is untrusted text too (no '/' can be in one).
HOSTILE_FILE = "x<img src=x onerror=window.__ks_pwned=7>'\".pt.trace.json"


def _names():
    return sorted(set(ks.load(HOSTILE).kernels["name"]))


@pytest.fixture
def watch(page):
    """Records alert()/confirm() dialogs (dismissing them) on the page."""
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    return page


def assert_nothing_ran(page):
    # onerror/onload handlers fire asynchronously: give them time to run if they were created.
    page.wait_for_timeout(1000)
    assert page.evaluate("() => window.__ks_pwned") is None
    assert page.dialogs == []
    assert page.locator("img[src='x']").count() == 0
    # JupyterLab's own page config (a JSON <script type="application/json">) carries the opened
    # path as data; any script the browser would run must not hold a payload.
    assert page.evaluate("() => [...document.querySelectorAll('script')].filter(s => "
                         "(!s.type || /javascript|module/.test(s.type)) && "
                         "s.textContent.includes('__ks_pwned')).map(s => s.outerHTML.slice(0, 200))") == []
    assert page.evaluate("() => [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
                         ".some(a => a.name.startsWith('on') && a.value.includes('__ks_pwned'))).length") == 0


def shown_text(locator) -> str:
    """Text a reader can see: rendered text plus tooltips and data attributes."""
    return locator.evaluate("""el => el.innerText + '\\n' + [...el.querySelectorAll('*')].flatMap(
        e => [...e.attributes].filter(a => a.name === 'title' || a.name.startsWith('data-')).map(a => a.value)
    ).join('\\n')""")


def test_static_html_fallback(watch):
    """The text/html fallback (GitHub, nbconvert) loaded as a page of its own."""
    page = watch
    rep = ks.load(HOSTILE)
    page.set_content(f"<!doctype html><html><body><div id='out'>{rep._repr_html_()}</div></body></html>")
    assert_nothing_ran(page)
    text = shown_text(page.locator("#out"))
    assert "window.__ks_pwned=1" in text      # the <script> payload, shown as text
    assert "onerror=\"window.__ks_pwned=3\"" in text


def _saved_notebook(lab, name, source):
    """A notebook executed by a real kernel, saved as a reader gets it: no widget state, no kernel."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nb.cells[0].id = "cell-0"
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(lab.root)}}).execute()
    for key in ("widgets", "kernelspec", "language_info"):
        nb.metadata.pop(key, None)
    nbformat.write(nb, lab.root / name)


def _open_without_kernel(lab, page, name):
    """Open a saved notebook as a reader does (no kernel: the kernel dialog declined); its
    kernelscope output area."""
    lab.shutdown_kernels()
    lab.open(page, name)
    dialog = page.locator("dialog.jp-Dialog")     # JupyterLab's own, not a crafted output's
    dialog.wait_for(timeout=30_000)
    dialog.locator("button.jp-mod-reject").click()
    return page.locator(".jp-OutputArea-output .ks-lab-static")


def test_saved_report_renderer_without_kernel(lab, watch):
    page = watch
    shutil.copy(HOSTILE, lab.root / "hostile.json")
    _saved_notebook(lab, "hostile_saved.ipynb", 'import kernelscope as ks\nks.load("hostile.json")')
    out = _open_without_kernel(lab, page, "hostile_saved.ipynb")
    out.locator(".ks-root").wait_for(timeout=30_000)
    rows = out.locator(".ks-row.ks-kernel")
    assert sorted(r.get_attribute("data-name") for r in rows.all()) == _names()
    rows.first.click()       # the details panel shows the full name
    out.locator(".ks-details .ks-fullname").wait_for()
    for tab in ("Timeline", "Backends", "Findings", "Roofline"):
        t = out.locator(f".ks-tab[data-tab='{tab}']")
        if t.count():
            t.click()
    assert_nothing_ran(page)
    assert "window.__ks_pwned=1" in shown_text(out)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "escaping_saved_report.png"), full_page=True)
    assert not page.errors, page.errors


def test_live_widget(lab, watch):
    page = watch
    shutil.copy(HOSTILE, lab.root / "hostile.json")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell('import kernelscope as ks\nrep = ks.load("hostile.json")\nrep.widget()'),
                nbformat.v4.new_code_cell("rep")]
    for i, c in enumerate(nb.cells):
        c.id = f"cell-{i}"
    nbformat.write(nb, lab.root / "hostile_live.ipynb")
    lab.open(page, "hostile_live.ipynb")
    wait_idle(page)
    for i in range(2):
        out = run_cell(page, i).locator(".jp-OutputArea-output")
        # the report, not the "loading" placeholder: the widget asks Python for its data first
        out.locator(".ks-row.ks-kernel").first.wait_for(timeout=90_000)
        rows = out.locator(".ks-row.ks-kernel")
        assert sorted(r.get_attribute("data-name") for r in rows.all()) == _names()
        rows.first.click()
        out.locator(".ks-details .ks-fullname").wait_for()
        for tab in ("Timeline", "Backends", "Findings", "Roofline", "CPU ops"):
            t = out.locator(f".ks-tab[data-tab='{tab}']")
            if t.count():
                t.click()
        assert "window.__ks_pwned=1" in shown_text(out)
    assert_nothing_ran(page)
    assert not page.errors, page.errors


def test_trace_file_viewer_with_hostile_file_name(lab, watch):
    page = watch
    shutil.copy(HOSTILE, lab.root / HOSTILE_FILE)
    lab.shutdown_kernels()
    lab.open(page, urllib.parse.quote(HOSTILE_FILE))
    view = page.locator(".ks-lab-file .ks-root")
    view.wait_for(timeout=30_000)
    assert view.locator(".ks-source").inner_text() == HOSTILE_FILE
    assert sorted(r.get_attribute("data-name") for r in view.locator(".ks-row.ks-kernel").all()) == _names()
    assert_nothing_ran(page)


def test_broken_file_error_with_hostile_file_name(lab, watch):
    page = watch
    name = "y<img src=x onerror=window.__ks_pwned=8>.pt.trace.json"
    (lab.root / name).write_text('{"traceEvents": [')
    lab.open(page, urllib.parse.quote(name))
    err = page.locator(".ks-lab-file.ks-error")
    err.wait_for(timeout=30_000)
    assert err.inner_text().startswith(f"kernelscope: {name}:")
    assert_nothing_ran(page)


# A colour that would cover the notebook with a panel of its own and fetch an outside URL, if it
# ever reached a style attribute (the outside review's "Session expired" panel).
PROBE = "ks-css-probe"
EVIL_COLOR = ("red;position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:99999;"
              f"background-image:url(http://127.0.0.1:9/{PROBE})")


def _crafted_notebook(lab, name, edit=None):
    """A saved notebook whose kernelscope output was edited (the renderer is `safe`: it renders
    untrusted notebooks): by `edit(header)`, else every colour of its vocabulary is CSS text."""
    from kernelscope.view.bundle import MIME_TYPE, mime_payload
    from kernelscope.view.codec import pack
    from kernelscope.view.report import view_model
    rep = ks.load(CORPUS.parent / "data" / "attention.pt.trace.json.gz")
    header, buf = view_model(rep)
    (edit or _evil_colours)(header)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("rep")
    cell.id = "cell-0"
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        MIME_TYPE: mime_payload(rep, packed=pack(header, buf)), "text/plain": "report"})]
    nb.cells = [cell]
    nbformat.write(nb, lab.root / name)


def _evil_colours(header):
    voc = header["vocabulary"]
    for table in ("backends", "copies", "host"):
        voc[table] = {k: EVIL_COLOR for k in voc[table]}
    for c in voc["causes"].values():
        c["color"] = EVIL_COLOR


def test_colours_from_a_saved_output_restyle_nothing(lab, watch):
    page = watch
    asked = []
    page.on("request", lambda r: asked.append(r.url) if PROBE in r.url else None)
    _crafted_notebook(lab, "crafted_colours.ipynb")
    out = _open_without_kernel(lab, page, "crafted_colours.ipynb")
    out.locator(".ks-row.ks-kernel").first.wait_for(timeout=30_000)

    def check():
        page.wait_for_timeout(1000)
        assert asked == []
        # Nothing of ours is positioned over the page, and every swatch is the neutral colour.
        fixed = out.evaluate("el => [...el.querySelectorAll('*')].filter(e => getComputedStyle(e).position === "
                             "'fixed').map(e => e.className)")
        assert fixed == []
        styles = out.evaluate("el => [...el.querySelectorAll('[style]')].map(e => e.getAttribute('style'))")
        assert styles and not [s for s in styles if "position" in s or "url(" in s or "red" in s]
        swatches = out.evaluate("el => [...el.querySelectorAll('.ks-swatch')].map(e => getComputedStyle(e).backgroundColor)")
        assert set(swatches) <= {"rgb(153, 153, 153)"}
        return swatches
    check()
    seen = []
    for tab in ("Timeline", "Backends", "Findings", "Kernels"):
        t = out.locator(f".ks-tab[data-tab='{tab}']")
        if t.count():
            t.click()
            seen += check()
    assert seen                        # swatches were shown (and are all neutral)
    assert_nothing_ran(page)


# A severity that, as a class name, would add JupyterLab's own full-page dialog to the output.
EVIL_SEVERITY = "x jp-Dialog"


def _evil_severities(header):
    for f in header["findings"] + header["fixes"]:
        f["severity"] = EVIL_SEVERITY
    # The closed set travels in the same untrusted payload: listing the value there is no way in.
    header["vocabulary"]["severities"].append(EVIL_SEVERITY)


def test_severity_from_a_saved_output_adds_no_class(lab, watch):
    """Issue 46 item 2: a payload's text names no class outside kernelscope's own."""
    page = watch
    _crafted_notebook(lab, "crafted_severity.ipynb", _evil_severities)
    out = _open_without_kernel(lab, page, "crafted_severity.ipynb")
    out.locator(".ks-row.ks-kernel").first.wait_for(timeout=30_000)
    badges = 0
    for tab in ("Findings", "Kernels"):
        out.locator(f".ks-tab[data-tab='{tab}']").click()
        foreign = out.evaluate("el => [...el.querySelectorAll('[class]')].flatMap(e => [...e.classList])"
                               ".filter(c => !c.startsWith('ks-'))")
        assert foreign == []
        assert page.locator(".jp-Dialog").count() == 0       # the kernel dialog was declined
        sev = out.locator(".ks-sev")
        assert set(sev.evaluate_all("els => els.map(e => e.className)")) == {"ks-sev"}
        assert EVIL_SEVERITY in sev.all_inner_texts()        # shown as text, styled as nothing
        badges += sev.count()
    assert badges
    assert_nothing_ran(page)
    assert not page.errors, page.errors
