"""The package's docstring examples run in the test command (``--doctest-modules``, names from
the root conftest.py) and most of them run for real: at least 150 docstrings have examples that
run, and at most a fifth of all example lines (``>>>`` and ``...``) are skipped (what needs a GPU,
a live IPython or a widget front end)."""
import doctest
import functools
import importlib
import pathlib
import pkgutil
import subprocess
import sys

import kernelscope

ROOT = pathlib.Path(__file__).resolve().parents[1]


class _Finder(doctest.DocTestFinder):
    # As pytest finds them: a functools.cached_property's docstring is its function's (the
    # standard finder skips them before Python 3.13).
    def _from_module(self, module, object):
        if isinstance(object, functools.cached_property):
            object = object.func
        return super()._from_module(module, object)


def _modules():
    yield kernelscope
    for m in pkgutil.walk_packages(kernelscope.__path__, "kernelscope."):
        yield importlib.import_module(m.name)


def example_counts() -> dict:
    """Docstrings with examples, those with at least one example that runs, example lines, and
    lines skipped (an example marked ``+SKIP`` skips all its lines)."""
    docs = run = lines = skipped = 0
    finder = _Finder()
    for mod in _modules():
        for test in finder.find(mod):
            if not test.examples:
                continue
            docs += 1
            ran = False
            for ex in test.examples:
                n = ex.source.count("\n")
                lines += n
                if ex.options.get(doctest.SKIP):
                    skipped += n
                else:
                    ran = True
            run += ran
    return {"docstrings": docs, "run": run, "lines": lines, "skipped_lines": skipped}


def test_the_test_command_runs_the_examples():
    # pyproject.toml's [tool.pytest.ini_options], read as lines (tomllib is Python 3.11+).
    lines = (ROOT / "pyproject.toml").read_text().split("\n")
    addopts = next(x for x in lines if x.startswith("addopts = "))
    testpaths = next(x for x in lines if x.startswith("testpaths = "))
    assert "--doctest-modules" in addopts.split('"')[1].split(), addopts
    assert '"kernelscope"' in testpaths, testpaths


def test_most_examples_run():
    c = example_counts()
    assert c["run"] >= 150, c
    assert c["skipped_lines"] * 5 <= c["lines"], c


def test_collecting_the_examples_imports_no_torch_or_ipython():
    # Collection imports every module. IPython comes only with the modules that talk to it (the
    # widget, through anywidget; the IPython extension); torch, cupy and jax never.
    code = ("import importlib, pkgutil, sys, kernelscope\n"
            "talk = ('kernelscope.view.widget', 'kernelscope.jupyter.magics')\n"
            "names = [m.name for m in pkgutil.walk_packages(kernelscope.__path__, 'kernelscope.')]\n"
            "heavy = lambda: sorted({k.split('.')[0] for k in sys.modules} & {'torch', 'IPython', 'cupy', 'jax'})\n"
            "for n in names:\n"
            "    if n not in talk: importlib.import_module(n)\n"
            "print(heavy())\n"
            "for n in talk: importlib.import_module(n)\n"
            "print(heavy())")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["[]", "['IPython']"], r.stdout
