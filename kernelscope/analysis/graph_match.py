"""Which capture made each replayed graph kernel: exact matches only, or a stated reason.

Two sources say what a graph's nodes were:

- the graph watch's records (``meta["graph_captures"]``, :mod:`kernelscope.capture.graph_watch`):
  every node's kernel name, grid and block, and the op, shapes, module and line that made it.
  A replay is the capture whose kernels (name, grid, block) are the replay's, as a multiset;
  within it, the i-th kernel of a kind by start time is the i-th node of that kind, which is
  exact where such nodes depend on one another (a chain) and stated as unmatched where they ran
  on parallel branches.
- the recording itself, where the capture happened inside it: the launches made while the stream
  captured are the graph's nodes in order, under their ops with shapes. A replay on one stream
  runs them in that order; each placement is checked against the kernel names (the same op run
  eagerly in the recording, else the op's family of names), and a replay that does not fit, or
  that more than one capture could have made, is unmatched.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kernelscope.analysis.graphs import capture_windows, launch_kind, name_fits
from kernelscope.trace.demangle import name_key

# The columns graph attribution adds to the kernels table.
ATTR_COLUMNS = {"graph": "object", "graph_replay": "Int64", "graph_node": "Int64",
                "capture_basis": "object", "capture_module": "object", "graph_unmatched": "object"}
NO_WATCH = ("captured before the recording, with no graph watch on: run ks.watch_graphs() "
            "(or %load_ext kernelscope) before the capture")


@dataclass
class Capture:
    """One captured graph: its nodes in the order they were added."""
    label: str
    origin: str                 # "watch" or "recording"
    nodes: list                 # dicts: kind, key (kernel nodes the watch read), op, op_index, ...
    capture_us: float | None = None
    deps: list = field(default_factory=list)
    start_us: float | None = None
    in_region: bool = False     # a watch record made while the recording ran

    def kernel_keys(self) -> Counter:
        return Counter(n["key"] for n in self.nodes if n["kind"] == "kernel")


def kernel_key(name, grid, block) -> tuple:
    return (name_key(name), tuple(int(x) for x in grid), tuple(int(x) for x in block))


def watch_captures(meta: dict) -> list[Capture]:
    """The watch's records carried by a recording, as captures (empty when it had none)."""
    out = []
    for rec in (meta.get("graph_captures") or {}).get("records", []):
        nodes = []
        for n in rec.get("nodes", []):
            d = dict(n)
            if d.get("kind") == "kernel" and d.get("name") and d.get("grid") and d.get("block"):
                d["key"] = kernel_key(d["name"], d["grid"], d["block"])
            else:
                d["key"] = None
            nodes.append(d)
        out.append(Capture(f"graph {rec.get('capture')}", "watch", nodes, rec.get("capture_us"),
                           [n.get("deps") or [] for n in nodes], in_region=bool(rec.get("in_region"))))
    return out


def trace_captures(trace) -> list[Capture]:
    """The captures made inside the recording: per capture, the node-adding launch calls in
    order, each with its op row (``op_index``) and Python line where the trace has stacks."""
    rt, ops = trace.runtime, trace.ops
    wins = capture_windows(rt)
    if not len(wins):
        return []
    from kernelscope.trace.tables import lookup
    names = rt["name"].to_numpy(dtype=object)
    kinds = np.array([launch_kind(n) for n in names], dtype=object)
    op_rows = lookup(ops["external_id"], rt["external_id"]) if len(ops) else np.full(len(rt), -1)
    out = []
    tids, starts = rt["tid"].to_numpy(dtype=object), rt["start_us"].to_numpy(dtype=float)
    for j, (tid, s, e) in enumerate(wins.itertuples(index=False)):
        m = (tids == tid) & (starts >= s) & (starts <= e) & (kinds != None)   # noqa: E711
        rows = np.flatnonzero(m)
        rows = rows[np.argsort(starts[rows], kind="stable")]
        nodes = []
        for r in rows:
            i = int(op_rows[r])
            nodes.append({"kind": kinds[r], "key": None, "op_index": i if i >= 0 else None,
                          "op": ops["name"].iat[i] if i >= 0 else None, "launch_tid": tid,
                          "launch_start_us": float(starts[r])})
        out.append(Capture(f"capture {j + 1}", "recording", nodes, float(e - s), start_us=float(s)))
    return out


def _reachable(deps: list) -> list[set]:
    """For each node, the set of nodes it (transitively) waits for."""
    before: list[set] = []
    for i, d in enumerate(deps):
        s = set()
        for j in d:
            if j < i:
                s.add(j)
                s |= before[j]
        before.append(s)
    return before


def _label(n: dict) -> tuple:
    return (n.get("op"), repr(n.get("input_dims")), repr(n.get("input_types")))


def place_watch(cap: Capture, keys: list, order: np.ndarray) -> tuple[dict, str]:
    """Kernel position (in start order) -> node index, for a replay whose kernels' keys are
    ``keys`` (start order), or (partial placement, reason) where parallel identical nodes make
    some placements unknowable."""
    by_key = defaultdict(list)
    for i, n in enumerate(cap.nodes):
        if n["kind"] == "kernel":
            by_key[n["key"]].append(i)
    before = None
    settled = set()
    seen = defaultdict(int)
    out: dict = {}
    reason = ""
    for pos in order:
        key = keys[pos]
        cands = by_key[key]
        if len(cands) > 1 and key not in settled:
            before = before if before is not None else _reachable(cap.deps)
            # Identical nodes are placed by start order only when each waits for the previous,
            # or when it makes no difference: every one was captured from the same op and shapes.
            chained = all(cands[t] in before[cands[t + 1]] for t in range(len(cands) - 1))
            if not chained and len({_label(cap.nodes[c]) for c in cands}) > 1:
                reason = "identical kernels ran on parallel branches of the graph: which node each was is unknown"
                continue
            settled.add(key)
        out[int(pos)] = cands[seen[key]]
        seen[key] += 1
    return out, reason


def _eager_names(trace, k: pd.DataFrame, captures: list) -> dict:
    """(op, shapes, dtypes) -> the kernel names that op launched when it ran eagerly, for the
    ops the captures hold (only their rows are looked at: a big trace has millions)."""
    ops = trace.ops
    wanted = {n["op"] for c in captures for n in c.nodes if n.get("op")}
    eager = k[~k["graph_launch"].fillna(False).astype(bool) & k["op_index"].notna()
              & k["op"].isin(list(wanted))]
    out = defaultdict(set)
    pairs = eager[["name", "op_index"]].drop_duplicates()
    for name, i in zip(pairs["name"], pairs["op_index"]):
        i = int(i)
        sig = (ops["name"].iat[i], repr(ops["input_dims"].iat[i]), repr(ops["input_types"].iat[i]))
        out[sig].add(name_key(name))
    return out


def check_names(trace, cap: Capture, names: list, eager: dict) -> tuple[int, str | None]:
    """How many placements an eager run of the same op checked, or the first that contradicts
    the kernel names (a reason)."""
    ops = trace.ops
    checked = 0
    kern = [n for n in cap.nodes if n["kind"] == "kernel"]
    for node, name in zip(kern, names):
        i = node.get("op_index")
        if i is None:
            continue
        op = ops["name"].iat[i]
        sig = (op, repr(ops["input_dims"].iat[i]), repr(ops["input_types"].iat[i]))
        if sig in eager:
            if name_key(name) not in eager[sig]:
                return checked, f"launch order puts {name[:60]} on {op}, which ran other kernels eagerly"
            checked += 1
        elif not name_fits(op, name):
            return checked, f"launch order puts {name[:60]} on {op}, whose kernels are named otherwise"
    return checked, None


@dataclass
class Replay:
    """One replay: its graph launch call and its kernels' rows (start order)."""
    correlation: int
    rows: np.ndarray
    launch_start_us: float


def replays(k: pd.DataFrame) -> list[Replay]:
    """The graph replays in a kernels table (rows by start time), in launch order."""
    g = np.flatnonzero(k["graph_launch"].fillna(False).to_numpy(dtype=bool))
    if not len(g):
        return []
    corr = k["correlation"].to_numpy(dtype="float64", na_value=np.nan)[g]
    start = k["start_us"].to_numpy(dtype=float)[g]
    launch = k["launch_start_us"].to_numpy(dtype=float)[g]
    order = np.lexsort((start, corr))
    g, corr, launch = g[order], corr[order], launch[order]
    cut = np.flatnonzero(np.diff(corr) != 0) + 1
    out = [Replay(int(c[0]), rows, float(np.nanmin(t)) if not np.isnan(t).all() else float("nan"))
           for rows, c, t in zip(np.split(g, cut), np.split(corr, cut), np.split(launch, cut))]
    out.sort(key=lambda r: (np.isnan(r.launch_start_us), r.launch_start_us))
    return out


def _same_labels(caps: list) -> bool:
    """Whether captures agree on every node's op, shapes, dtypes and module (then which of them
    a replay ran does not change what its kernels are said to be)."""
    cols = ("op", "input_dims", "input_types", "module")
    first = [[n.get(c) for c in cols] for n in caps[0].nodes]
    return all([[n.get(c) for c in cols] for n in c.nodes] == first for c in caps[1:])


def _common_sources(caps: list) -> Capture:
    """The last of several captures with the same labels, its source lines kept only where all
    of them agree (a line they differ on is not known)."""
    cap = caps[-1]
    if len(caps) == 1:
        return cap
    nodes = [dict(n) for n in cap.nodes]
    for i, n in enumerate(nodes):
        if any(c.nodes[i].get("source") != n.get("source") for c in caps[:-1]):
            n["source"] = None
    return Capture(cap.label, cap.origin, nodes, cap.capture_us, cap.deps, cap.start_us, cap.in_region)


def _pair_in_region(watch: list, recorded: list) -> dict:
    """Watch record index -> the recording's capture made at the same time (by order among the
    captures made during the region, in order, that agree on every node's kind)."""
    out, j = {}, 0
    for i, c in enumerate(watch):
        if not c.in_region or not c.nodes:
            continue
        kinds = [n["kind"] for n in c.nodes]
        # Both lists are in capture order: the next recorded capture with the same node kinds.
        while j < len(recorded) and [n["kind"] for n in recorded[j].nodes] != kinds:
            j += 1
        if j == len(recorded):
            break
        out[i] = recorded[j]
        j += 1
    return out


def _replay_keys(k: pd.DataFrame, reps: list) -> dict:
    """Row -> its kernel key (demangled name, grid, block), computed once per distinct launch."""
    if not reps:
        return {}
    rows = np.concatenate([r.rows for r in reps])
    cols = ["name", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
    sub = k.iloc[rows][cols]
    codes = sub.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    first = pd.Series(np.arange(len(rows))).groupby(codes).first().to_numpy()
    uniq = {int(c): kernel_key(sub["name"].iat[f], sub.iloc[f, 1:4].tolist(), sub.iloc[f, 4:7].tolist())
            for c, f in zip(np.unique(codes), first)}
    return {int(r): uniq[int(c)] for r, c in zip(rows, codes)}


def match(trace, k: pd.DataFrame):
    """Per graph kernel (row of ``k``): the capture and node that made it, or why none is known.

    Returns ``(placements, reasons, graph_of)``: ``placements`` maps a row to ``(source capture,
    node index, basis, capture)``, ``reasons`` maps an unmatched row to its reason, ``graph_of``
    names the graph of an unmatched row whose replay was matched.
    """
    reps = replays(k)
    watch, recorded = watch_captures(trace.meta), trace_captures(trace)
    twin = _pair_in_region(watch, recorded)
    by_fp = defaultdict(list)
    for i, c in enumerate(watch):
        by_fp[frozenset(c.kernel_keys().items())].append(i)
    names = k["name"].to_numpy(dtype=object)
    keys = _replay_keys(k, reps) if watch else {}
    eager = _eager_names(trace, k, recorded) if recorded else {}
    streams = k["stream"].to_numpy()
    placements, reasons, graph_of = {}, {}, {}
    fp_cache: dict = {}
    placed_cache: dict = {}
    common: dict = {}
    watch_on = bool((trace.meta.get("graph_captures") or {}).get("watch"))
    for rep in reps:
        rows = rep.rows
        if watch:
            rk = [keys[r] for r in rows]
            fp = tuple(rk)
            if fp not in fp_cache:
                fp_cache[fp] = by_fp.get(frozenset(Counter(rk).items()), [])
            cands = fp_cache[fp]
            if cands:
                caps = [watch[i] for i in cands]
                if len(caps) > 1 and not _same_labels(caps):
                    for r in rows:
                        reasons[r] = (f"{len(caps)} captured graphs have exactly these kernels, grids and "
                                      "blocks but were captured from different ops, shapes or modules")
                    continue
                if tuple(cands) not in common:
                    common[tuple(cands)] = _common_sources(caps)
                cap = common[tuple(cands)]
                basis = "graph watch: kernel name, grid and block" + \
                        (f" (one of {len(caps)} identical captures)" if len(caps) > 1 else "")
                if (cands[-1], fp) not in placed_cache:
                    placed_cache[(cands[-1], fp)] = place_watch(cap, rk, np.arange(len(rows)))
                placed, why = placed_cache[(cands[-1], fp)]
                src = twin.get(cands[-1])
                for pos, node in placed.items():
                    placements[rows[pos]] = (src or cap, node, basis, cap)
                for pos in set(range(len(rows))) - set(placed):
                    reasons[rows[pos]] = why
                    graph_of[rows[pos]] = cap.label
                continue
        _place_by_order(trace, k, rep, recorded, eager, streams, names, placements, reasons,
                        watched=watch_on)
    return placements, reasons, graph_of


def _place_by_order(trace, k, rep, recorded, eager, streams, names, placements, reasons, *, watched):
    rows = rep.rows
    n_k = len(rows)
    fits = [c for c in recorded if c.start_us is not None and c.start_us <= rep.launch_start_us
            and sum(n["kind"] == "kernel" for n in c.nodes) == n_k]
    if not fits:
        why = ("no capture in the recording or the graph watch has these kernels" if watched else NO_WATCH)
        for r in rows:
            reasons[r] = why
        return
    if len(fits) > 1:
        for r in rows:
            reasons[r] = (f"{len(fits)} captures in the recording launched {n_k} kernels; the trace does "
                          "not say which one this replay ran (the graph watch would)")
        return
    if len(set(streams[rows].tolist())) > 1:
        for r in rows:
            reasons[r] = "the graph ran on several streams: its launch order cannot place its kernels"
        return
    cap = fits[0]
    checked, why = check_names(trace, cap, [names[r] for r in rows], eager)
    if why:
        for r in rows:
            reasons[r] = why
        return
    kern = [i for i, n in enumerate(cap.nodes) if n["kind"] == "kernel"]
    basis = (f"launch order in the recorded capture; names checked against eager runs ({checked} of {n_k})"
             if checked else "launch order in the recorded capture; names checked by the ops' kernel families")
    for pos, r in enumerate(rows):
        placements[r] = (cap, kern[pos], basis, cap)


def _op_row(n: dict, at_us: float) -> dict:
    return {"name": n.get("op"), "cat": "graph_capture", "pid": None, "tid": "graph capture",
            "start_us": at_us, "duration_us": 0.0, "external_id": None,
            "input_dims": n.get("input_dims"), "input_types": n.get("input_types")}


def attach(trace):
    """The trace with every replayed graph kernel given the op that captured it (``op``,
    ``op_index``, ``source``) and the :data:`ATTR_COLUMNS`; ops captured before the recording
    join the ops table as rows of category ``graph_capture`` (no CPU time in the recording).
    A trace without graph kernels, or already attached, comes back as it is.

    >>> attach(rep.trace) is rep.trace
    True
    """
    import dataclasses
    k = trace.kernels
    if "graph" in k.columns or not len(k) or not k["graph_launch"].fillna(False).any():
        return trace
    k = k.reset_index(drop=True)    # rows are positions from here on
    placements, reasons, graph_of = match(trace, k)
    k["graph_replay"] = pd.array([None] * len(k), dtype="Int64")
    ops = trace.ops
    new_rows: list = []
    row_of: dict = {}
    n = len(k)
    op, op_index = k["op"].to_numpy(dtype=object).copy(), k["op_index"].astype("Int64").to_numpy(dtype=object)
    source = k["source"].to_numpy(dtype=object).copy()
    cols = {c: np.full(n, None, dtype=object) for c in ("graph", "graph_node", "capture_basis",
                                                         "capture_module", "graph_unmatched")}
    frames = _frame_lists(trace.frames)
    # Every replay of a graph places its kernels on the same nodes: resolve each node once.
    groups: dict = defaultdict(list)
    for i, (src, node, basis, cap) in placements.items():
        groups[(id(src), node, id(cap), basis)].append(i)
    by_id = {id(v[0]): v[0] for v in placements.values()} | {id(v[3]): v[3] for v in placements.values()}
    for (src_id, node, cap_id, basis), rows in groups.items():
        src, cap = by_id[src_id], by_id[cap_id]
        at = np.asarray(rows)
        n_src, n_cap = src.nodes[node], cap.nodes[node]
        if src.origin == "recording":
            op[at], op_index[at] = n_src.get("op"), n_src.get("op_index")
            if frames is not None and "source" not in n_cap:
                from kernelscope.trace.sources import innermost_frames
                n_cap["source"] = innermost_frames([n_src["launch_tid"]], [n_src["launch_start_us"]], frames)[0]
        elif n_cap.get("op"):
            sig = (cap_id, n_cap.get("op"), repr(n_cap.get("input_dims")), n_cap.get("module"), n_cap.get("source"))
            if sig not in row_of:
                row_of[sig] = len(ops) + len(new_rows)
                new_rows.append(_op_row(n_cap, float(k["launch_start_us"].iat[rows[0]])))
            op[at], op_index[at] = n_cap["op"], row_of[sig]
        if n_cap.get("source"):
            source[at] = n_cap["source"]
        cols["graph"][at], cols["graph_node"][at] = cap.label, node
        cols["capture_basis"][at], cols["capture_module"][at] = basis, n_cap.get("module")
    for i, why in reasons.items():
        cols["graph_unmatched"][i] = why
    for i, label in graph_of.items():
        cols["graph"][i] = label
    for c, v in cols.items():
        k[c] = pd.Series(v, dtype=object) if ATTR_COLUMNS[c] == "object" else pd.array(v, dtype=ATTR_COLUMNS[c])
    k["op"] = pd.Series(op, dtype=object, index=k.index)
    k["op_index"] = pd.array([None if v is None or v is pd.NA else int(v) for v in op_index], dtype="Int64")
    k["source"] = pd.Series(source, dtype=object, index=k.index)
    _number_replays(k)
    if new_rows:
        from kernelscope.trace.model import OP_COLUMNS, frame
        extra = frame({c: [r.get(c) for r in new_rows] for c in OP_COLUMNS}, OP_COLUMNS)
        ops = pd.concat([ops, extra], ignore_index=True)
    return dataclasses.replace(trace, kernels=k, ops=ops)


def _frame_lists(fr: pd.DataFrame) -> dict | None:
    """The frames table as the lists ``innermost_frames`` reads (None without stacks)."""
    return {c: fr[c].tolist() for c in ("name", "tid", "start_us", "duration_us")} if len(fr) else None


def _number_replays(k: pd.DataFrame) -> None:
    """``graph_replay``: each replay's ordinal among its graph's replays (1 = first)."""
    g = k["graph_launch"].fillna(False).to_numpy(dtype=bool)
    if not g.any():
        return
    sub = k.loc[g, ["graph", "correlation", "launch_start_us"]].copy()
    sub["graph"] = sub["graph"].fillna("unmatched")
    first = sub.groupby("correlation")["launch_start_us"].transform("min")
    sub["_t"] = first
    order = sub.drop_duplicates("correlation").sort_values("_t")
    order["n"] = order.groupby("graph").cumcount() + 1
    n = dict(zip(order["correlation"], order["n"]))
    k.loc[g, "graph_replay"] = pd.array([n[c] for c in sub["correlation"]], dtype="Int64")
