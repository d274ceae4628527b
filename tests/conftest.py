"""Shared test setup: where the real H200 recordings live, the gpu marker's skip, the chromium
the browser tests drive (found, or installed once) and NVIDIA's cupti-python (found, or installed
once apart from torch's own libcupti)."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

DATA = pathlib.Path(__file__).parent / "data"
CHROMIUM = "/usr/bin/chromium"       # Debian's package (apt-get install chromium)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def written_out_union(intervals) -> float:
    """Length of the union of (start, end) intervals by the textbook sweep, written out apart
    from the analysis code so that tests check it against an independent computation."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


def iopub_until_idle(kc, msg_id, timeout=120) -> list:
    """The iopub messages a Jupyter kernel sends for request ``msg_id``, until it is idle again.

    >>> msgs = iopub_until_idle(kc, kc.execute("print(1)"))     # doctest: +SKIP
    """
    out = []
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return out
        out.append(m)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (runs on the H200 machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def find_chromium(candidates=None, apt_get="", as_root=None, say=print) -> str:
    """The chromium the browser tests drive: ``$KERNELSCOPE_CHROMIUM`` if set, else Debian's
    /usr/bin/chromium or a chromium on PATH. When there is none and this is a Debian/Ubuntu
    machine where the tests run as root, Debian's chromium is installed with apt-get (about 25 s,
    once: the next run finds it); otherwise the tests fail saying what to install.

    >>> find_chromium()                 # doctest: +SKIP
    '/usr/bin/chromium'
    """
    chosen = os.environ.get("KERNELSCOPE_CHROMIUM")
    if chosen and candidates is None:
        if os.path.exists(chosen):
            return chosen
        pytest.fail(f"KERNELSCOPE_CHROMIUM={chosen} does not exist", pytrace=False)
    if candidates is None:
        candidates = [CHROMIUM, shutil.which("chromium"), shutil.which("chromium-browser")]
    found = next((c for c in candidates if c and os.path.exists(c)), None)
    if found:
        return found
    apt_get = shutil.which("apt-get") if apt_get == "" else apt_get
    as_root = (hasattr(os, "geteuid") and os.geteuid() == 0) if as_root is None else as_root
    if apt_get and as_root:
        say("kernelscope browser tests: Debian's chromium is missing; installing it once with apt-get "
            "(apt-get install -y chromium, about 25 s)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in ([apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", "chromium"]):
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if r.returncode:
                pytest.fail(f"`{' '.join(cmd)}` failed ({r.returncode}): {(r.stderr or r.stdout)[-2000:]}\n"
                            "Install Debian's chromium yourself (apt-get install -y chromium), or run "
                            "python -m pytest -m 'not browser'.", pytrace=False)
        found = next((c for c in candidates if c and os.path.exists(c)), None) or shutil.which("chromium")
        if found:
            return found
    pytest.fail("The browser tests (-m browser) drive Chromium through Playwright and found none "
                f"(looked for {', '.join(c for c in candidates if c) or CHROMIUM}). Install Debian's chromium "
                "(sudo apt-get install -y chromium), or set KERNELSCOPE_CHROMIUM to a Chromium binary, or "
                "leave the browser tests out with python -m pytest -m 'not browser'.", pytrace=False)


@pytest.fixture(scope="session")
def chromium(request):
    """Path of the chromium binary (found, or installed once; see :func:`find_chromium`)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    say = (lambda m: reporter.write_line(m, yellow=True)) if reporter else (lambda m: print(m, file=sys.stderr))
    return find_chromium(say=say)


# Where the tests install cupti-python when it is missing: apart from site-packages, because it
# pins an nvidia-cuda-cupti that torch's own pin conflicts with (README, Hardware counters).
CUPTI_SITE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "kernelscope-tests" / "cupti"


@pytest.fixture(scope="session")
def cupti_python(request):
    """Make NVIDIA's cupti-python importable for kernelscope (``KERNELSCOPE_CUPTI_PATH``): found,
    or installed once with pip into :data:`CUPTI_SITE` (``--no-deps``: torch keeps its libcupti).
    Skips the test, saying why, when neither works (no network, no pip)."""
    from kernelscope.capture.counters import import_cupti
    try:
        import_cupti()
        return os.environ.get("KERNELSCOPE_CUPTI_PATH")
    except ImportError:
        pass
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter:
        reporter.write_line(f"kernelscope tests: installing cupti-python once into {CUPTI_SITE}", yellow=True)
    if not (CUPTI_SITE / "cupti").exists():
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                            "--target", str(CUPTI_SITE), "cupti-python==13.4.*", "pyelftools"],
                           capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"cupti-python is not installed and pip could not install it: {(r.stderr or r.stdout)[-500:]}")
    os.environ["KERNELSCOPE_CUPTI_PATH"] = str(CUPTI_SITE)
    try:
        import_cupti()
    except ImportError as e:
        pytest.skip(str(e))
    return str(CUPTI_SITE)
