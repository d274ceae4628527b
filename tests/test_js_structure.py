"""The house rules on size, for the front end and the package alike: no file over 600 lines, no
function over 80 lines (counted from its first line to its last), and every JS view module names
the Python module that builds its part of the payload (a file that exists).

JS is read by a small scanner, not a parser: it blanks out comments, strings, template literals
and regular expressions, then finds functions (declarations and expressions, class and object
methods, arrow functions) and matches each body by bracket depth."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "js" / "src"
PKG = ROOT / "kernelscope"
MAX_FILE = 600
MAX_FUNCTION = 80

_KEYWORDS_BEFORE_REGEX = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case",
                          "do", "else", "yield", "await"}
_AFTER_PARAMS = re.compile(r"\s*(=>\s*)?")
_NOT_METHODS = {"if", "for", "while", "switch", "catch", "with", "function", "return"}


def js_files() -> list[Path]:
    return sorted(p for p in JS.rglob("*.js"))


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def mask_js(src: str) -> str:
    """``src`` with every comment, string, template literal and regex replaced by spaces (quotes
    kept, newlines kept), so that brackets left are code. A template's ``${...}`` stays code.

    >>> mask_js('a = "x{" + `y${ {b: 1} }z` // }')
    'a = "  " + `  ${ {b: 1} }  `     '
    >>> mask_js('s = t.replace(/[{(]/g, "}") / 2')
    's = t.replace(/    /g, " ") / 2'
    """
    out = list(src)
    n = len(src)
    i = 0
    # What each open "{" belongs to: a template's ${ (True) or code (False).
    braces: list[bool] = []
    last = ""          # the last significant code character or word, to tell a regex from a division

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    def template(j):
        # From just after a backtick (or a template's closing brace): to the next ${ or closing backtick.
        start = j
        while j < n:
            c = src[j]
            if c == "\\":
                j += 2
                continue
            if c == "`":
                blank(start, j)
                return j + 1, False
            if c == "$" and j + 1 < n and src[j + 1] == "{":
                blank(start, j)
                return j + 2, True
            j += 1
        blank(start, n)
        return n, False

    while i < n:
        c = src[i]
        if c in " \t\r\n":
            i += 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
            last = c
            continue
        if c == "`":
            i, opened = template(i + 1)
            if opened:
                braces.append(True)
            last = "`"
            continue
        if c == "/" and (not last or last in "(,=:[!&|?{};+-*%<>~^" or last in _KEYWORDS_BEFORE_REGEX):
            j, cls = i + 1, False
            while j < n and src[j] != "\n":
                if src[j] == "\\":
                    j += 2
                    continue
                if src[j] == "[":
                    cls = True
                elif src[j] == "]":
                    cls = False
                elif src[j] == "/" and not cls:
                    break
                j += 1
            blank(i + 1, j)
            i = j + 1
            last = "/"
            continue
        if c == "{":
            braces.append(False)
        elif c == "}" and braces and braces.pop():
            i, opened = template(i + 1)
            if opened:
                braces.append(True)
            last = "`"
            continue
        m = re.match(r"[A-Za-z_$][\w$]*", src[i:i + 40])
        if m:
            last = m.group(0)
            i += len(last)
            continue
        last = c
        i += 1
    return "".join(out)


def _close(code: str, i: int) -> int:
    """Index of the bracket that closes the one at ``code[i]``."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] in "([{":
            depth += 1
        elif code[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def _expression_end(code: str, i: int) -> int:
    """Where an arrow function's expression body that starts at ``i`` ends: a ``;``, ``,`` or
    closing bracket at its own depth."""
    depth = 0
    for j in range(i, len(code)):
        c = code[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return j - 1
        elif c in ";," and depth == 0:
            return j - 1
    return len(code) - 1


def js_functions(src: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every function in ``src``: declarations and expressions,
    methods, and arrow functions (named by the const they are assigned to, else "(arrow)").

    >>> js_functions("function f(a) {\\n  return () => {\\n    a;\\n  };\\n}\\nclass C {\\n  m() {}\\n}\\n"
    ...              "const g = (x) =>\\n  x + 1;\\n")
    [('f', 1, 5), ('(arrow)', 2, 4), ('m', 7, 7), ('g', 9, 10)]
    """
    code = mask_js(src)
    line_at = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_at[k] = line
        if ch == "\n":
            line += 1
    line_at[len(code)] = line
    found = []
    for m in re.finditer(r"\(", code):
        start = m.start()
        close = _close(code, start)
        after = _AFTER_PARAMS.match(code, close + 1)
        body = after.end()
        # What precedes the "(" on its statement (a window: the scan stays linear).
        before = code[max(0, start - 300):start].rstrip()
        base = max(0, start - 300)
        word = re.search(r"([A-Za-z_$][\w$]*|\"\s*\"|'\s*')\s*$", before)
        name = word.group(1) if word else ""
        if after.group(1):                                    # (params) => body
            arrow = re.search(r"(?:const|let|var)\s+([\w$]+)\s*=\s*(?:async\s*)?$", before)
            name = arrow.group(1) if arrow else "(arrow)"
            first = line_at[base + arrow.start()] if arrow else line_at[start]
        elif body < len(code) and code[body] == "{":
            fn = re.search(r"function\s*\*?\s*([\w$]*)\s*$", before)
            if fn:                                             # function name(params) { body }
                name = fn.group(1) or "(function)"
                first = line_at[base + fn.start()]
            elif word and name not in _NOT_METHODS and not before[:word.start()].endswith("."):
                first = line_at[base + word.start()]                # a method: name(params) { body }
                mods = re.search(r"(?:(?:static|async|get|set)\s+)+$", before[:word.start()])
                if mods and "\n" not in mods.group(0):
                    first = line_at[base + mods.start()]
                name = name if name[0] not in "\"'" else src[base + word.start():base + word.end()]
            else:
                continue
        else:
            continue
        last = _close(code, body) if code[body:body + 1] == "{" else _expression_end(code, body)
        found.append((name, first, line_at[last]))
    # A single parameter without parentheses: x => body.
    for m in re.finditer(r"(?:(?:const|let|var)\s+([\w$]+)\s*=\s*(?:async\s+)?)?\b[\w$]+\s*=>\s*", code):
        body = m.end()
        last = _close(code, body) if code[body:body + 1] == "{" else _expression_end(code, body)
        found.append((m.group(1) or "(arrow)", line_at[m.start()], line_at[last]))
    return sorted(found, key=lambda f: (f[1], -f[2]))


def py_functions(path: Path) -> list[tuple[str, int, int]]:
    """(qualified name, def line, last line) of every function and method of a Python file."""
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    out.append((name, child.lineno, child.end_lineno))
                walk(child, f"{name}.")
            else:
                walk(child, prefix)

    walk(ast.parse(path.read_text()), "")
    return out


def _lines(p: Path) -> int:
    return len(p.read_text().splitlines())


def js_over_limits() -> dict[str, str]:
    """{"path" or "path name": what is over, where} for every JS file of js/src."""
    out = {}
    for p in js_files():
        if _lines(p) > MAX_FILE:
            out[_rel(p)] = f"{_lines(p)} lines"
        for name, a, b in js_functions(p.read_text()):
            if b - a + 1 > MAX_FUNCTION:
                out[f"{_rel(p)} {name}"] = f"{b - a + 1} lines, from line {a}"
    return out


def py_over_limits() -> dict[str, str]:
    """{"path" or "path::function": what is over} for every Python file of the package."""
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        if _lines(p) > MAX_FILE:
            out[_rel(p)] = f"{_lines(p)} lines"
        for name, a, b in py_functions(p):
            if b - a + 1 > MAX_FUNCTION:
                out[f"{_rel(p)}::{name}"] = f"{b - a + 1} lines"
    return out


def test_the_scanner_reads_every_js_file():
    """Brackets left after blanking comments, strings, templates and regexes balance: otherwise
    the scanner misread a file, and its function sizes mean nothing."""
    for p in js_files():
        code = mask_js(p.read_text())
        for a, b in ("()", "[]", "{}"):
            assert code.count(a) == code.count(b), f"{_rel(p)}: {code.count(a)} {a!r} against {code.count(b)} {b!r}"


def test_js_files_and_functions_are_small():
    over = js_over_limits()
    assert not over, (f"over {MAX_FILE} lines a file or {MAX_FUNCTION} a function (split it into named pieces):\n"
                      + "\n".join(f"{k}: {v}" for k, v in over.items()))


def test_python_files_and_functions_are_small():
    over = py_over_limits()
    assert not over, (f"over {MAX_FILE} lines a file or {MAX_FUNCTION} a function (split it into named pieces):\n"
                      + "\n".join(f"{k}: {v}" for k, v in over.items()))


# A Python file named by its path ("kernelscope/view/report.py", "analysis/stalls.py": from the
# package) or a dotted name ("kernelscope.view.codec.pack": a module, then a name it defines).
_PY_PATH = re.compile(r"(?<![\w./-])((?:[A-Za-z_]\w*/)+[A-Za-z_]\w*\.py)\b")
_PY_DOTTED = re.compile(r"(?<![\w./-])kernelscope(?:\.[A-Za-z_]\w*)+")


def header_comment(src: str) -> str:
    """The comment lines a JS file opens with (its header)."""
    out = []
    for line in src.splitlines():
        if line.startswith("//"):
            out.append(line)
        elif line.strip() or out:
            break
    return "\n".join(out)


def _defines(path: Path, name: str) -> bool:
    """Whether a Python module defines ``name`` at its top level (def, class, assignment, import)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        if (isinstance(node, (ast.Import, ast.ImportFrom))
                and any((a.asname or a.name.split(".")[0]) == name for a in node.names)):
            return True
    return False


def python_exists(ref: str) -> bool:
    """Whether a path or dotted name cited in js/src names something in the repository."""
    if ref.endswith(".py") and "/" in ref:
        return (ROOT / ref).is_file() or (PKG / ref).is_file()
    parts = ref.split(".")
    for n in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:n])
        module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if module.is_file():
            rest = parts[n:]
            return not rest or _defines(module, rest[0]) or (base / f"{rest[0]}.py").is_file()
    return False


def python_refs(src: str) -> set[str]:
    return set(_PY_PATH.findall(src)) | {m.group(0) for m in _PY_DOTTED.finditer(src)}


def test_every_view_module_names_its_python_partner():
    """Each JS view module's header says which Python module builds the payload part it draws."""
    bare = [_rel(p) for p in sorted((JS / "view").glob("*.js"))
            if not any(r.startswith("kernelscope") for r in python_refs(header_comment(p.read_text())))]
    assert not bare, f"JS view modules whose header comment names no kernelscope/....py module: {bare}"


def test_every_python_name_in_js_exists():
    stale = {(_rel(p), ref) for p in js_files() for ref in python_refs(p.read_text()) if not python_exists(ref)}
    assert not stale, f"js/src names Python modules or names that do not exist (moved? renamed?): {sorted(stale)}"
