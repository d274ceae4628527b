"""Which rank of a distributed job a trace came from, read from its header.

torch.profiler writes ``distributedInfo`` (backend, rank, world size, process groups) into the
trace header whenever ``torch.distributed`` is initialized; ``ks.profile()`` adds its own
``kernelscopeRank`` entry with what Kineto leaves out (the host and the local rank). Both are
untrusted input: every field is type-checked, and a bad one is dropped, never raised on.
"""
from __future__ import annotations

import ast

# The header key ks.profile() writes its rank tag under (torch.profiler's add_metadata_json).
RANK_TAG = "kernelscopeRank"


def _int(v):
    """A rank, size or group id as the header wrote it: a JSON integer in int32, else None.

    Not :func:`kernelscope.jsonable.whole`: the header is type-checked, not coerced; a rank written
    as text or with a fraction is a damaged field, dropped rather than read as another rank.
    """
    return v if isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31 else None


def _str(v):
    return v if isinstance(v, str) and v else None


def parse_ranks(v, size=None) -> list | None:
    """A process group's ranks as Kineto writes them: a list, or its text (``"[0, 1]"``),
    which Kineto cuts short with ``...`` for long groups (then the stride fills it in only if
    ``size`` says how many).

    >>> parse_ranks("[0, 2, 4]"), parse_ranks([1, 3]), parse_ranks("[0, 8, ...]", size=4)
    ([0, 2, 4], [1, 3], [0, 8, 16, 24])
    """
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v.strip()[:100_000])
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(v, (list, tuple)):
        return None
    if v and v[-1] is Ellipsis:
        head = [_int(x) for x in v[:-1]]
        if len(head) < 2 or None in head or size is None:
            return None
        stride = head[1] - head[0]
        return [head[0] + i * stride for i in range(size)]
    out = [_int(x) for x in v]
    return None if None in out else out


def rank_meta(dist_info, tag=None, host=None) -> dict | None:
    """``meta["distributed"]`` from a header's ``distributedInfo``, ``kernelscopeRank`` and
    ``host_name`` (any may be missing or damaged); None when neither of the first two names a rank.

    >>> rank_meta({"backend": "gloo", "rank": 1, "world_size": 2})["rank"]
    1
    >>> rank_meta(None, {"rank": 3, "world_size": 8, "host": "node7"})["host"]
    'node7'
    """
    d = dist_info if isinstance(dist_info, dict) else {}
    t = tag if isinstance(tag, dict) else {}
    rank = _int(t.get("rank")) if _int(t.get("rank")) is not None else _int(d.get("rank"))
    if rank is None or rank < 0:
        return None
    world = _int(t.get("world_size")) or _int(d.get("world_size"))
    out = {
        "rank": rank,
        "world_size": world if world and world > rank else None,
        "backend": _str(t.get("backend")) or _str(d.get("backend")),
        "host": _str(t.get("host")) or _str(host),
        "local_rank": _int(t.get("local_rank")),
        "nccl_version": _str(d.get("nccl_version")),
        "process_groups": [],
    }
    pgs = d.get("pg_config")
    for pg in pgs if isinstance(pgs, list) else []:
        if not isinstance(pg, dict):
            continue
        size = _int(pg.get("pg_size"))
        out["process_groups"].append({
            "name": _str(pg.get("pg_name")) if not isinstance(pg.get("pg_name"), int) else str(pg["pg_name"]),
            "desc": _str(pg.get("pg_desc")), "backend": _str(pg.get("backend_config")),
            "size": size, "ranks": parse_ranks(pg.get("ranks"), size),
        })
    return out


def merge_rank_tag(meta_dist, tag) -> dict | None:
    """``meta["distributed"]`` of a live capture: what the reader found in the header (if the
    capture went through Kineto's file) completed with the tag ``ks.profile()`` took itself.

    >>> merge_rank_tag(None, {"rank": 0, "world_size": 2, "host": "h"})["world_size"]
    2
    """
    own = rank_meta(None, tag)
    if not isinstance(meta_dist, dict):
        return own
    d = dict(meta_dist)
    for key, value in (own or {}).items():
        if d.get(key) in (None, []):
            d[key] = value
    return d
