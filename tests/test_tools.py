"""The repository's own tools (``tools/``): the tiling tool the benchmarks use, run on a real H200
recording, and the benchmarks finding it in the repository rather than outside it."""
import pathlib
import subprocess
import sys

import kernelscope as ks

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "mlp_train.pt.trace.json.gz"


def test_tile_trace_tiles_a_real_recording(tmp_path):
    out = tmp_path / "tiled.json"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "tile_trace.py"), str(SOURCE), str(out),
                        "--events", "20000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    copies = int(r.stderr.split("(")[1].split()[0])
    one, tiled = ks.load(SOURCE, progress=False), ks.load(out, progress=False)
    assert copies > 1
    assert len(tiled.kernels) == copies * len(one.kernels)
    # Each copy's launches keep their own CPU op (correlation ids stay unique across copies).
    assert tiled.kernels["op"].notna().sum() == copies * one.kernels["op"].notna().sum()
    assert tiled.kernels["correlation"].is_unique


def test_the_benchmarks_use_the_repositorys_tiling_tool(monkeypatch):
    monkeypatch.delenv("KERNELSCOPE_TILE_TRACE", raising=False)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import tiles
    assert tiles.tile_tool() == ROOT / "tools" / "tile_trace.py"
    assert tiles.tile_tool().is_file()
