"""Which earlier cells a replayed cell needs (``%%kernelprofile --ncu`` / ``--stalls``), read from
the cells' source with :mod:`ast`; nothing runs.

A cell is needed when it binds a name that the profiled cell (or a needed cell after it) reads,
or changes the object behind such a name: ``x.foo = ...``, ``x[i] = ...``, ``del x.foo``, a
method call as a statement (``model.eval()``), an in-place method anywhere (``model.to(...)``,
``w.add_(1)``), a name passed to a function called as a statement (``train(model)``). Names a
kernelscope recording made (``-o met``) and names computed from them (``k = met.kernels``) exist
only in the notebook's kernel, so a cell that only reads them is never needed. Cells that change
the process rather than names (``%env``, ``%cd``, ``%run``, ``os.environ[...] =``, ``sys.path``,
``from m import *``) always run again.

This is an over-approximation of what Python would do (an alias made through a function call,
or state changed inside a function the cell calls, is not seen); ``--setup`` names the cells
where it is wrong.
"""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

# Methods that change the object they are called on even where their result is used
# (``m2 = model.to("cuda")`` moves ``model``), besides torch's trailing-underscore in-place ops.
IN_PLACE = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "eval", "train",
                      "requires_grad_", "zero_grad", "step", "backward", "load_state_dict", "apply",
                      "register_buffer", "register_parameter", "register_forward_hook",
                      "register_forward_pre_hook", "register_full_backward_hook", "add_module",
                      "append", "extend", "insert", "update", "pop", "clear", "remove", "setdefault",
                      "add", "discard", "sort", "reverse", "fuse_model", "compile"})
# Calls that hand out an object's own tensors: what is built from them changes the object.
_OWNED = frozenset({"parameters", "named_parameters", "buffers", "state_dict", "modules", "children"})
# A module's function called as a statement changes the process only when it sets something:
# ``torch.manual_seed(0)``, ``torch.set_float32_matmul_precision("high")``, ``jax.config.update``.
_SETTER = re.compile(r"^(set|use_|manual_seed|seed|config|update|enable|disable|allow)", re.I)
# Functions called as statements that only look at their arguments.
_READERS = frozenset({"print", "display", "repr", "len", "type", "help", "dir", "vars", "id",
                      "isinstance", "hasattr", "pprint", "str", "format", "sorted", "list", "sum"})
# Magics whose argument is code that runs (the replay child runs it too).
_CODE_MAGICS = frozenset({"time", "timeit", "prun", "capture", "kernelprofile", "memit"})
# Magics that change the process: the cells holding them always run again.
_PROCESS_MAGICS = frozenset({"env", "cd", "run", "load_ext", "reload_ext", "aimport", "autoreload"})
_BUILTINS = frozenset(dir(builtins)) | {"get_ipython", "__name__", "__file__", "In", "Out", "_", "__", "___"}
# Statements that hold blocks (``_Flow.compound``); ``match`` is looked up where it exists (3.10+).
_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try,
             getattr(ast, "TryStar", ast.Try))


@dataclass
class CellInfo:
    """What one cell's code reads, binds and changes, by name."""

    uses: set = field(default_factory=set)       # names read before the cell binds them
    binds: set = field(default_factory=set)      # names the cell binds (or deletes)
    kills: set = field(default_factory=set)      # names it binds unconditionally, at its top level
    mutates: set = field(default_factory=set)    # names whose objects it changes
    imports: set = field(default_factory=set)    # names bound to modules
    process: list = field(default_factory=list)  # why it changes the process (always runs again)
    derived: dict = field(default_factory=dict)  # name it binds -> the names its value came from
    aliases: dict = field(default_factory=dict)  # name it binds -> names whose object it may be
    syntax_error: str | None = None


def analyse(source: str, modules=frozenset()) -> CellInfo:
    """What the Python ``source`` of a cell (IPython-transformed, magics as
    ``get_ipython().run_line_magic(...)`` calls) reads, binds and changes.

    >>> info = analyse("import torch\\nmodel = make()\\nmodel.to('cuda')\\ny = model(x)\\n")
    >>> sorted(info.uses), sorted(info.binds), sorted(info.mutates)
    (['make', 'x'], ['model', 'torch', 'y'], ['model'])

    ``modules``: names other cells bound to modules (``torch.cuda.synchronize()`` changes nothing).
    """
    info = CellInfo()
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        info.syntax_error = f"{e.msg} (line {e.lineno})"
        return info
    _Flow(info, modules).run(tree.body)
    info.uses -= _BUILTINS
    info.mutates -= _BUILTINS
    return info


class _Flow:
    """Walks a cell's statements in the order they run, keeping what is bound so far."""

    def __init__(self, info: CellInfo, modules=frozenset()):
        self.info = info
        self.modules = set(modules)
        self.bound: set = set()
        self.deferred: set = set()    # module names read inside functions (read when called)
        self.done: set = set()        # calls already looked at as statements
        self.alias: dict = {}         # name -> the names whose object it may be (``for p in m.parameters()``)

    def run(self, body):
        for stmt in body:
            self.stmt(stmt)
            if (isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.FunctionDef,
                                  ast.AsyncFunctionDef, ast.ClassDef, ast.Delete))
                    and not (isinstance(stmt, ast.AnnAssign) and stmt.value is None)):
                self.info.kills |= _target_names(stmt)
        self.info.uses |= self.deferred - self.bound

    # -- reads --------------------------------------------------------------------------------
    def read(self, node):
        """Names ``node`` (an expression) reads; nested scopes are read as functions."""
        if node is None:
            return set()
        names = set()
        for sub in _walk_scope(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                names.add(sub.id)
            elif isinstance(sub, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                names |= _scope_reads(sub)
            elif isinstance(sub, ast.NamedExpr):
                self.bind({sub.target.id}, self.read(sub.value))
            if isinstance(sub, ast.Call) and id(sub) not in self.done:
                self.call(sub, statement=False)
        for n in names - self.bound:
            self.info.uses.add(n)
        return names

    def call(self, node: ast.Call, statement: bool):
        if isinstance(node.func, ast.Attribute):
            if self.magic(node):
                return "magic"
            root = _root(node.func.value)
            if root is None:
                return None
            if root in self.info.imports or (root in self.modules and root not in self.bound):
                if statement and _SETTER.match(node.func.attr):
                    self.mutate(root)
                    if root in ("os", "sys"):
                        self.info.process.append(f"{root}.{node.func.attr}(...)")
                return None
            if statement or node.func.attr in IN_PLACE or (node.func.attr.endswith("_")
                                                            and not node.func.attr.startswith("_")):
                self.mutate(root)
        elif statement and isinstance(node.func, ast.Name) and node.func.id not in _READERS:
            for a in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(a, ast.Name):
                    self.mutate(a.id)
        return None

    def magic(self, node: ast.Call) -> bool:
        """``get_ipython().run_line_magic("time", "x = f()")``: the code inside counts as the cell's."""
        f = node.func
        if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Name)
                and f.value.func.id == "get_ipython"):
            return False
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        if f.attr in ("run_line_magic", "run_cell_magic") and args and isinstance(args[0], str):
            name = args[0]
            code = args[2] if f.attr == "run_cell_magic" and len(args) > 2 else (args[1] if len(args) > 1 else None)
            if name in _PROCESS_MAGICS and not (name in ("load_ext", "reload_ext") and "kernelscope" in str(code)):
                self.info.process.append(f"%{name}")
            elif name in _CODE_MAGICS and isinstance(code, str):
                try:
                    self.run(ast.parse(code).body)
                except SyntaxError:
                    pass
            elif name == "writefile" or name == "store":
                self.info.process.append(f"%{name}")
        return True

    # -- writes -------------------------------------------------------------------------------
    def bind(self, names, came_from=()):
        for n in names:
            self.bound.add(n)
            self.info.binds.add(n)
            self.info.derived[n] = set(came_from) | (self.info.derived.get(n, set()) if n in came_from else set())
            self.alias.pop(n, None)

    def mutate(self, name):
        if name in _BUILTINS:
            return
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            self.info.mutates.add(n)
            if n not in self.bound:
                self.info.uses.add(n)      # changing an object reads the name first
            todo += list(self.alias.get(n, ()))

    def target(self, t, came_from, alias=None):
        """Bind the names of an assignment target; ``x.a = v`` / ``x[i] = v`` change ``x``."""
        if isinstance(t, ast.Name):
            self.bind({t.id}, came_from)
            self.info.aliases.pop(t.id, None)
            if alias:
                self.alias[t.id] = set(alias)
                self.info.aliases[t.id] = set(alias)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self.target(e, came_from, alias)
        elif isinstance(t, ast.Starred):
            self.target(t.value, came_from, alias)
        elif isinstance(t, (ast.Attribute, ast.Subscript)):
            root = _root(t)
            self.read(t.value)
            if isinstance(t, ast.Subscript):
                self.read(t.slice)
            if root is not None:
                self.mutate(root)
                if _dotted(t).startswith(("os.environ", "sys.path", "sys.modules")):
                    self.info.process.append(_dotted(t).split("[")[0])

    # -- statements ---------------------------------------------------------------------------
    def stmt(self, s):
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call):
                self.done.add(id(s.value))
                if self.call(s.value, statement=True) == "magic":
                    return
            self.read(s.value)
        elif isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            self.assignment(s)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            for a in s.names:
                if a.name == "*":
                    self.info.process.append(f"from {s.module} import *")
                    continue
                name = a.asname or a.name.split(".")[0]
                self.bind({name})
                self.info.imports.add(name)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.definition(s)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Name):
                    self.bind({t.id})
                    if t.id not in self.bound - {t.id}:
                        self.info.uses.add(t.id)
                else:
                    self.target(t, set())
        elif isinstance(s, _COMPOUND) or (hasattr(ast, "Match") and isinstance(s, ast.Match)):
            self.compound(s)
        elif isinstance(s, ast.Global):
            pass
        else:
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self.read(child)

    def assignment(self, s):
        """``x = v``, ``x += v``, ``x: T = v``: the value read, the targets bound (an augmented
        name is read and changed too)."""
        if isinstance(s, ast.Assign):
            src = self.read(s.value)
            alias = _aliased(s.value)
            for t in s.targets:
                self.target(t, src, alias)
        elif isinstance(s, ast.AugAssign):
            src = self.read(s.value)
            if isinstance(s.target, ast.Name):
                if s.target.id not in self.bound:
                    self.info.uses.add(s.target.id)
                self.mutate(s.target.id)
                self.bind({s.target.id}, src | {s.target.id})
            else:
                self.target(s.target, src)
        else:
            src = self.read(s.value)
            if s.value is not None:
                self.target(s.target, src, _aliased(s.value))

    def definition(self, s):
        """A ``def`` or ``class``: its decorators, defaults and bases read now, its body's reads
        deferred to when it runs, its name bound (and the globals it assigns)."""
        for d in s.decorator_list:
            self.read(d)
        if isinstance(s, ast.ClassDef):
            for b in [*s.bases, *(k.value for k in s.keywords)]:
                self.read(b)
            body_reads = _class_reads(s)
        else:
            for d in [*s.args.defaults, *s.args.kw_defaults]:
                self.read(d)
            body_reads = _scope_reads(s)
        self.deferred |= body_reads
        self.bind({s.name}, body_reads)
        for g in _globals_assigned(s):
            self.bind({g})

    def compound(self, s):
        """A loop, ``if``, ``with``, ``try`` or ``match``: what it reads and binds, then its blocks."""
        if isinstance(s, (ast.For, ast.AsyncFor)):
            src = self.read(s.iter)
            self.target(s.target, src, _roots(s.iter))
            self.run_block(s.body + s.orelse)
        elif isinstance(s, (ast.While, ast.If)):
            self.read(s.test)
            self.run_block(s.body + s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                src = self.read(item.context_expr)
                if item.optional_vars is not None:
                    self.target(item.optional_vars, src)
            self.run_block(s.body)
        elif isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.run_block(s.body)
            for h in s.handlers:
                self.read(h.type)
                if h.name:
                    self.bind({h.name})
                self.run_block(h.body)
            self.run_block(s.orelse + s.finalbody)
        else:                                   # match
            self.read(s.subject)
            for case in s.cases:
                for sub in ast.walk(case.pattern):
                    for attr in ("name", "rest"):
                        if isinstance(getattr(sub, attr, None), str):
                            self.bind({getattr(sub, attr)})
                self.run_block(case.body)

    def run_block(self, body):
        for stmt in body:
            self.stmt(stmt)


def _walk_scope(node):
    """``ast.walk`` that does not enter nested scopes (their reads are taken apart)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                            ast.GeneratorExp, ast.FunctionDef, ast.AsyncFunctionDef,
                                            ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(n))


def _scope_reads(node) -> set:
    """The module names a function, lambda or comprehension reads: what it loads, less its own
    locals (parameters, names it binds unless declared global, comprehension targets)."""
    local, loads, glob = set(), set(), set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                local.add(arg.arg)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        body = [*node.generators, *((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,))]
    else:
        body = node.body if isinstance(node.body, list) else [node.body]
    for b in body:
        for sub in ast.walk(b):
            if isinstance(sub, ast.Global):
                glob |= set(sub.names)
            elif isinstance(sub, ast.Name):
                (loads if isinstance(sub.ctx, ast.Load) else local).add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                local.add(sub.name)
            elif isinstance(sub, ast.arg):
                local.add(sub.arg)
            elif isinstance(sub, ast.alias):
                local.add(sub.asname or sub.name.split(".")[0])
    return loads - (local - glob)


def _class_reads(node: ast.ClassDef) -> set:
    loads, local = set(), set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            loads |= _scope_reads(stmt)
            local.add(stmt.name)
            continue
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name):
                (loads if isinstance(sub.ctx, ast.Load) else local).add(sub.id)
    return loads - local


def _globals_assigned(node) -> set:
    glob = {n for sub in ast.walk(node) if isinstance(sub, ast.Global) for n in sub.names}
    stores = {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store)}
    return glob & stores


def _root(node):
    """The name an attribute/subscript/call chain starts from: ``a`` of ``a.b[0].c()``."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _plain_root(node):
    """The name of a chain of attributes and subscripts (``a`` of ``a.b[0]``); None where a call
    is in it (``torch.nn.Linear(8, 8).w`` is a new object, not ``torch``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _roots(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _aliased(value):
    """Names whose object the value may be: ``m = model``, ``m = model.encoder``, ``layer = net[0]``."""
    if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
        r = _plain_root(value)
        return {r} if r else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in IN_PLACE:
        r = _plain_root(value.func.value)     # ``m = model.to("cuda")`` is model itself
        if r or isinstance(value.func.value, ast.Call):
            return {r} if r else _aliased(value.func.value)   # ``model.half().cuda()``
    if isinstance(value, ast.Call):
        # ``opt = SGD(model.parameters())``: opt.step() changes model's weights
        owners = {_root(c.func.value) for c in ast.walk(value) if isinstance(c, ast.Call)
                  and isinstance(c.func, ast.Attribute) and c.func.attr in _OWNED}
        return {o for o in owners if o} or None
    return None


def _dotted(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - only a label
        return ""


def _target_names(stmt) -> set:
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in stmt.names if a.name != "*"}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    targets = stmt.targets if isinstance(stmt, (ast.Assign, ast.Delete)) else [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
            and isinstance(n.ctx, (ast.Store, ast.Del)) and t is not None
            and not isinstance(t, (ast.Attribute, ast.Subscript))}


# -- choosing the cells ------------------------------------------------------------------------------
@dataclass
class Cell:
    """One earlier cell: its number, its Python source (IPython-transformed, kernelscope's own
    magics taken out), whether it succeeded live (None: not seen), its live run time in seconds
    (None: not measured) and the names a kernelscope recording in it stored (``-o NAME``)."""

    count: int
    source: str
    ok: bool | None = True
    seconds: float | None = None
    outputs: tuple = ()


@dataclass
class Plan:
    """The cells to replay, in order, and why the others are left out."""

    run: list = field(default_factory=list)        # [(Cell, optional: bool, why: str)]
    left_out: list = field(default_factory=list)   # [(Cell, why: str)]
    too_long: list = field(default_factory=list)   # [(Cell, names it binds that are needed)]
    results_used: set = field(default_factory=set)  # kernelscope results the profiled cell reads


def plan_replay(cells: list, profiled: str, *, limit_s: float | None = 60.0) -> Plan:
    """Which of ``cells`` (:class:`Cell`, any order) to replay before ``profiled`` (Python source):
    those binding a name it needs or changing such a name's object, transitively; never one that
    only reads a kernelscope result; none that ran longer than ``limit_s`` (None: no limit).
    A cell in the plan only because it changes a needed object (it binds none) is ``optional``:
    the replay skips it if it fails.

    >>> p = plan_replay([Cell(1, "import torch\\nx = torch.ones(3)\\n"), Cell(2, "y = 1\\n", outputs=("met",)),
    ...                  Cell(3, "k = met.kernels\\n"), Cell(4, "x.mul_(2)\\n")], "z = x + 1\\n")
    >>> [(c.count, optional) for c, optional, _ in p.run]
    [(1, False), (4, True)]
    """
    cells = sorted(cells, key=lambda c: c.count)
    infos = {c.count: analyse(c.source) for c in cells}
    modules = {m for i in infos.values() for m in i.imports}
    infos = {c.count: analyse(c.source, modules) for c in cells}
    made = {o for c in cells for o in c.outputs}            # only the notebook's kernel has these
    derived = _derived_from(cells, infos, made)
    aliases = {}
    for c in cells:
        for k, v in infos[c.count].aliases.items():
            aliases.setdefault(k, set()).update(v - modules)   # a module's object is not the module
    this = analyse(profiled, modules)
    need = set(this.uses) | set(this.mutates)
    plan = Plan(results_used=need & derived)
    chosen = {}
    for c in reversed(cells):
        info = infos[c.count]
        if not c.source.strip():
            continue
        if c.ok is False:
            plan.left_out.append((c, "raised when it ran"))
            continue
        binds_needed = (info.binds & need) - derived
        changes_needed = (_closure(info.mutates, aliases) & need) - derived
        if info.syntax_error:
            plan.left_out.append((c, f"is not Python kernelscope can read ({info.syntax_error})"))
            continue
        if not (binds_needed or changes_needed or info.process):
            reads = sorted((info.uses | info.mutates) & derived)
            plan.left_out.append((c, f"reads kernelscope's results ({', '.join(reads[:3])})" if reads
                                  else "not needed by this cell"))
            continue
        if limit_s is not None and c.seconds is not None and c.seconds > limit_s:
            plan.too_long.append((c, sorted(binds_needed)))
            if binds_needed:   # the replay will not run; what it would need, for the --setup to suggest
                need = ((need - info.kills) | info.uses | info.mutates) - derived
            continue
        why = (f"binds {', '.join(sorted(binds_needed)[:4])}" if binds_needed else
               f"changes {', '.join(sorted(changes_needed)[:4])}" if changes_needed else
               f"changes the process ({', '.join(info.process[:2])})")
        chosen[c.count] = (c, not binds_needed, why)
        need = (need - info.kills) | info.uses | (info.mutates - info.kills)
        need -= derived
    plan.run = [chosen[n] for n in sorted(chosen)]
    plan.left_out.sort(key=lambda x: x[0].count)
    plan.too_long.sort(key=lambda x: x[0].count)
    return plan


def _closure(names, aliases) -> set:
    out, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n not in out:
            out.add(n)
            todo += list(aliases.get(n, ()))
    return out


def _derived_from(cells, infos, made) -> set:
    """``made`` and every name whose value was computed from one of them, in cell order
    (``k = met.kernels``; ``top = k.head()``); a name bound again from other values is clean again."""
    tainted = set(made)
    for c in cells:
        info = infos[c.count]
        for name, src in info.derived.items():
            if src & tainted:
                tainted.add(name)
            elif name in info.kills:
                tainted.discard(name)
        tainted |= set(c.outputs)
    return tainted
