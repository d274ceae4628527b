"""The README's two commands are the whole set-up: CI runs exactly them, and the test command
finds (or installs) the browser its browser tests drive."""
import pathlib
import shutil
import sys

import pytest

from tests.conftest import find_chromium

ROOT = pathlib.Path(__file__).resolve().parent.parent


def readme_commands():
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_the_two_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[:5] == ["# kernelscope", "", "```bash", 'pip install -e ".[test]" && python -m kernelscope demo',
                         "python -m pytest"]
    assert readme_commands() == lines[3:5]


def test_ci_runs_exactly_the_readme_commands():
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    body = [ln for ln in script if ln.strip() and not ln.startswith("#")]
    assert body[:2] == ["set -euxo pipefail", 'cd "$(dirname "$0")/.."']
    assert body[2:] == readme_commands()          # nothing installed behind the README's back


def test_the_browser_is_found_where_it_is():
    assert find_chromium(candidates=[None, "/nonexistent/chromium", sys.executable]) == sys.executable


def test_no_browser_and_no_way_to_install_it_says_what_to_install(tmp_path):
    for apt_get, root in ((None, True), (shutil.which("true") or "/bin/true", False)):
        with pytest.raises(pytest.fail.Exception) as e:
            find_chromium(candidates=[str(tmp_path / "chromium")], apt_get=apt_get, as_root=root)
        msg = str(e.value)
        assert "apt-get install -y chromium" in msg and "KERNELSCOPE_CHROMIUM" in msg and "not browser" in msg


def test_a_failed_install_says_so(tmp_path):
    said = []
    false = shutil.which("false") or "/bin/false"
    with pytest.raises(pytest.fail.Exception) as e:
        find_chromium(candidates=[str(tmp_path / "chromium")], apt_get=false, as_root=True, say=said.append)
    assert said and "installing it once with apt-get" in said[0]
    assert f"`{false} update -qq` failed (1)" in str(e.value)
    assert "apt-get install -y chromium" in str(e.value)


def test_a_chosen_browser_that_is_not_there(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELSCOPE_CHROMIUM", str(tmp_path / "my-chromium"))
    with pytest.raises(pytest.fail.Exception, match="KERNELSCOPE_CHROMIUM=.*my-chromium does not exist"):
        find_chromium()
