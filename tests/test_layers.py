"""Layers import one way: no part of kernelscope imports a part above it.

Every ``import`` and ``from ... import`` in the package (the IPython layer, kernelscope.jupyter, included) is read from the
source (imports inside functions too: a lazy import is still a dependency). The allowed
directions are the table below; docs/architecture.md shows the same table, and
``test_the_architecture_page_shows_this_table`` keeps the two equal.

Adding a module: put it in the part (row) whose job it does; a new top-level module or
subpackage needs a row here and on the architecture page.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "kernelscope"

# The layers, lowest first: (layer, its parts). A part is a top-level module or subpackage of
# kernelscope ("kernelscope" itself is the package's public API, kernelscope/__init__.py).
LAYERS = [
    ("base", ("errors", "units", "jsonable")),
    ("trace", ("trace",)),
    ("analysis", ("analysis",)),
    ("panels", ("panels",)),
    ("output", ("render", "view")),
    ("reports", ("reports",)),
    ("loading", ("loading", "capture")),
    ("entry", ("kernelscope", "__main__", "jupyter")),
]
# A part imports its own part, every part of a lower layer, and, within its layer, only these.
SAME_LAYER = {
    "view": {"render"},                    # the MIME bundle's text/html, the ranks view's labels
    "loading": {"capture"},                # ks.load(a stopped torch.profiler)
    # the entry points: the API loads the magics (%load_ext kernelscope); they use the API
    **{p: {"kernelscope", "__main__", "jupyter"} - {p} for p in ("kernelscope", "__main__", "jupyter")},
}
LEVEL = {part: i for i, (_, parts) in enumerate(LAYERS) for part in parts}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT)
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _exists(module: str) -> bool:
    p = ROOT.joinpath(*module.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def _targets(path: Path):
    """(line, imported module) for every import in the file, relative ones resolved."""
    name = _module_name(path)
    package = name if _is_package(path) else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield node.lineno, mod
            for a in node.names:     # ``from .. import units``: the submodule is the target
                if _exists(f"{mod}.{a.name}"):
                    yield node.lineno, f"{mod}.{a.name}"


def _part(module: str) -> str | None:
    bits = module.split(".")
    if bits[0] != "kernelscope":
        return None
    return bits[1] if len(bits) > 1 else "kernelscope"


def _files():
    return sorted(PACKAGE.rglob("*.py"))


def test_every_part_has_a_row():
    parts = {_part(_module_name(p)) for p in _files()}
    assert parts <= set(LEVEL), f"parts missing from LAYERS: {sorted(parts - set(LEVEL))}"


def test_imports_run_one_way():
    bad = []
    for path in _files():
        src = _part(_module_name(path))
        for line, mod in _targets(path):
            dst = _part(mod)
            if dst is None or dst == src:
                continue
            if dst not in LEVEL:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {src} imports {mod}, a part with no row")
                continue
            if LEVEL[dst] < LEVEL[src] or dst in SAME_LAYER.get(src, ()):
                continue
            where = "above it" if LEVEL[dst] > LEVEL[src] else "beside it (not in SAME_LAYER)"
            bad.append(f"{path.relative_to(ROOT)}:{line}: {src} ({LAYERS[LEVEL[src]][0]}) imports {mod} "
                       f"({LAYERS[LEVEL[dst]][0]}), {where}")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_the_check_sees_lazy_and_relative_imports():
    """The parser resolves what these forms import (so a violation in any of them is caught)."""
    path = PACKAGE / "analysis" / "findings" / "timeline.py"
    got = {m for _, m in _targets(path)}
    assert "kernelscope.units" in got and "kernelscope.analysis.timeline" in got
    path = PACKAGE / "reports" / "outputs.py"
    got = {m for _, m in _targets(path)}
    assert "kernelscope.view.widget" in got           # imported inside a method
    assert _part("kernelscope") == "kernelscope" and _part("kernelscope.jupyter.magics") == "jupyter"


def test_the_architecture_page_shows_this_table():
    page = (ROOT / "docs" / "architecture.md").read_text()
    layers, same = [], {}
    for line in page.splitlines():
        m = re.match(r"^\|\s*\d+\.\s*(\w+)\s*\|([^|]*)\|([^|]*)\|", line)
        if not m:
            continue
        parts = tuple(p.rstrip("/") for p in re.findall(r"`([\w./]+)`", m.group(2)))
        layers.append((m.group(1), parts))
        cell = m.group(3).strip()
        if cell == "each other":
            for p in parts:
                same[p] = set(parts) - {p}
        elif cell != "-":
            for clause in cell.split(";"):
                src, _, dsts = clause.partition(":")
                same[src.strip()] = {d.strip() for d in dsts.split(",")}
    assert layers == LAYERS, f"docs/architecture.md's layer table differs from LAYERS: {layers}"
    want = {k: v for k, v in SAME_LAYER.items() if LAYERS[LEVEL[k]][0] != "entry"}
    want.update({p: set(LAYERS[-1][1]) - {p} for p in LAYERS[-1][1]})
    assert same == want, f"docs/architecture.md's same-layer column differs from SAME_LAYER: {same}"


def _graph():
    """{module: the package's modules it imports} (the IPython entry point's own import of the
    magics aside: ``%load_ext kernelscope`` must find them in the package's top level)."""
    modules = {_module_name(p): p for p in _files()}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for _, mod in _targets(path):
            while mod and mod not in modules:
                mod = mod.rpartition(".")[0]
            # a module's own packages run before it whatever it imports: not an edge
            if mod and mod != name and not name.startswith(mod + "."):
                deps.add(mod)
        graph[name] = deps
    return graph


def test_no_circle_of_imports():
    """No module reaches itself through the modules it imports (lazy imports counted): each
    module can be read knowing only those below it."""
    graph = _graph()
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):       # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                circles.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, f"circles of imports: {circles}"


def test_no_import_of_another_modules_private_names():
    """``from x import _name`` between modules means x's inside is someone else's API: make the
    name public (and documented) in x, or move the code to where it is used."""
    bad = []
    for path in _files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("kernelscope")):
                bad.extend(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{a.name}" for a in node.names
                           if a.name.startswith("_") and not a.name.startswith("__"))
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)
