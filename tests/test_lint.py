"""The linters, run by the test command so that CI (which runs only ``python -m pytest``) keeps
the code clean: ruff (rules in pyproject.toml), mypy on ``kernelscope/`` (its settings there too)
and biome on ``js/`` (``js/biome.jsonc``: its linter, and its formatter as a check). Each fails
with the linter's own report."""
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(cmd, cwd=ROOT):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} found problems:\n{r.stdout[-6000:]}{r.stderr[-3000:]}"
    return r


def _module(name):
    # The linters are in the test extra: pip install -e ".[test]".
    r = subprocess.run([sys.executable, "-m", name, "--version"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f'{name} is not installed: pip install -e ".[test]"')


def test_ruff_is_clean():
    _module("ruff")
    _run([sys.executable, "-m", "ruff", "check", "--no-cache", "."])


def test_mypy_is_clean():
    _module("mypy")
    r = _run([sys.executable, "-m", "mypy"])   # files and settings: [tool.mypy] in pyproject.toml
    assert "Success" in r.stdout


def test_biome_is_clean():
    js = ROOT / "js"
    biome = js / "node_modules" / ".bin" / "biome"
    if not biome.exists():
        node = "npm is missing: install Node.js" if shutil.which("npm") is None else "run npm install in js/"
        pytest.fail(f"biome is not installed ({biome}): {node}")
    r = _run([str(biome), "lint", "--error-on-warnings", "."], cwd=js)
    assert "Checked" in r.stdout + r.stderr
    # The formatter too: code it would lay out otherwise fails (fix: biome format --write . in js/).
    r = _run([str(biome), "format", "."], cwd=js)
    assert "Checked" in r.stdout + r.stderr


def test_blind_excepts_say_why():
    """Every ``except Exception`` ruff lets through (``# noqa: BLE001``) in the package says
    after the code why catching everything is right there: ``# noqa: BLE001 - the reason``."""
    import io
    import re
    import tokenize
    directive = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)(?P<rest>.*)")
    bare = []
    for path in sorted((ROOT / "kernelscope").rglob("*.py")):
        text = path.read_text()
        if "BLE001" not in text:
            continue
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            m = directive.search(tok.string) if tok.type == tokenize.COMMENT else None
            if m and "BLE001" in m["codes"] and not re.match(r"\s*-\s*\w+\W+\w+", m["rest"]):
                bare.append(f"{path.relative_to(ROOT)}:{tok.start[0]}: {tok.string}")
    assert not bare, "blind excepts without a reason (write `# noqa: BLE001 - why`):\n" + "\n".join(bare)
