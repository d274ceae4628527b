"""Magic arguments that broke the session (issue 46, item 5), in a real IPython shell."""
import tracemalloc

import pytest

pytest.importorskip("IPython")

from kernelscope.jupyter.replay import parse_setup


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "kernelscope")
    return sh


@pytest.mark.parametrize("name", ["__builtins__", "__name__", "_", "__", "_5", "_i", "_iii", "_i3", "_oh", "In", "Out",
                                  "get_ipython", "exit", "print", "class", "1x"])
def test_output_names_ipython_relies_on_are_refused(shell, name):
    from IPython.core.error import UsageError
    before = shell.user_ns.get(name, "<unset>")
    with pytest.raises(UsageError, match=f"-o '?{name}'?: "):
        shell.run_cell_magic("kernelprofile", f"-o {name}", "y_guard = 1\n")
    assert shell.user_ns.get(name, "<unset>") is before and "y_guard" not in shell.user_ns
    # and the next cell still runs
    assert shell.run_cell("z_guard = 1 + 1").success and shell.user_ns["z_guard"] == 2


def test_setup_range_is_clipped_before_it_is_listed():
    tracemalloc.start()
    try:
        cells = parse_setup("2-999999999,4", below=6)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cells == [2, 3, 4, 5] and peak < 1 << 20, peak
    with pytest.raises(ValueError, match="more than 100,000 cells"):
        parse_setup("1-999999999")
