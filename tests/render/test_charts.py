"""rep.chart(...) and comparison.chart(): altair charts built from the report's own tables, valid
Vega-Lite, displayed as the Vega-Lite 5 MIME type JupyterLab draws offline (tests/ui has the
browser check), without changing how the user's other altair charts display."""
import pathlib

import pandas as pd
import pytest

import kernelscope as ks
from kernelscope.render import charts

alt = pytest.importorskip("altair")
DATA = pathlib.Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def mlp():
    return ks.load(DATA / "mlp_train.pt.trace.json.gz")


@pytest.fixture(autouse=True)
def altair_renderer():
    """Each test starts from altair's own default renderer, and leaves it so."""
    alt.renderers.enable("default")
    yield
    alt.renderers.enable("default")


def _data(chart):
    """The rows a chart (or each layer of it) draws, from its Vega-Lite spec."""
    spec = chart.to_dict()          # also validates the spec against the Vega-Lite schema
    datasets = spec.get("datasets", {})
    return spec, [pd.DataFrame(rows) for rows in datasets.values()]


def test_backends_chart_is_the_gpu_rows_of_rep_backends(mlp):
    spec, (df,) = _data(mlp.chart("backends"))
    gpu = mlp.backends[mlp.backends["gpu_time_us"].fillna(0) > 0]
    assert sorted(df["backend"]) == sorted(gpu["backend"])
    assert df.set_index("backend")["gpu_time_ms"].to_dict() == pytest.approx(
        (gpu.set_index("backend")["gpu_time_us"] / 1e3).to_dict())
    assert spec["encoding"]["x"]["title"] == "GPU time (ms, CUPTI)"


def test_kernels_chart_is_the_top_of_the_summary(mlp):
    _, (df,) = _data(mlp.chart("kernels", top=7))
    s = mlp.summary().head(7)
    assert df["name"].tolist() == s["name"].tolist()
    assert df["total_ms"].tolist() == pytest.approx((s["total_us"] / 1e3).tolist())
    assert df["occupancy"].notna().all()


def test_timeline_keeps_every_launch_copy_and_gap(mlp):
    _, (df,) = _data(mlp.chart("timeline"))
    assert df["launches"].sum() == len(mlp.kernels) + len(mlp.copies) + len(mlp.gaps)
    lanes = {f"{d} s{s}" for d, s in zip(mlp.kernels["device"], mlp.kernels["stream"])}
    assert lanes <= set(df["lane"]) and "cuda:0 idle" in set(df["lane"])
    assert (df["end_ms"] >= df["start_ms"]).all() and df["start_ms"].min() == 0


def test_timeline_of_many_launches_merges_what_one_pixel_holds():
    rep = ks.load(DATA / "launch_bound.pt.trace.json.gz")       # 2000 tiny kernels on one stream
    _, (df,) = _data(rep.chart("timeline"))
    assert df["launches"].sum() == len(rep.kernels) + len(rep.copies) + len(rep.gaps)
    assert df.groupby(["lane", "what"]).size().max() <= charts.TIMELINE_MARKS_PER_LANE
    assert len(df) < len(rep.kernels) + len(rep.gaps)


def test_occupancy_chart_marks_the_launch(mlp):
    from kernelscope.panels.shapes import shape_details
    chart = mlp.chart("occupancy", kernel="nvjet")
    spec = chart.to_dict()
    k = mlp.kernels.reset_index(drop=True)
    row = int(k.index[k["name"].str.contains("nvjet")][0])
    entry = shape_details(mlp, int(k.at[row, "shape"]))
    title = spec["title"]["text"] if isinstance(spec["title"], dict) else spec["title"]
    assert f"{entry['occupancy']:.0%} theoretical occupancy" in title
    points = [pd.DataFrame(v) for v in spec["datasets"].values()]
    marks = [p for p in points if len(p) == 1]
    assert sorted(float(p["x"].iloc[0]) for p in marks) == sorted([entry["threads"], entry["registers"], entry["smem"]])
    assert all(p["occupancy"].iloc[0] == pytest.approx(entry["occupancy"]) for p in marks)
    # The costliest kernel when none is named; a clear error for an unknown one.
    assert mlp.chart("occupancy").to_dict()
    with pytest.raises(ValueError, match="no kernel named 'no such kernel'"):
        mlp.chart("occupancy", kernel="no such kernel")


def test_unknown_chart_kind_says_which_exist(mlp):
    with pytest.raises(ValueError, match="backends, kernels, timeline, occupancy"):
        mlp.chart("pie")
    with pytest.raises(ValueError, match="kernel= is for the occupancy chart"):
        mlp.chart("kernels", kernel="x")


def test_comparison_chart():
    c = ks.compare(ks.load(DATA / "launch_bound.pt.trace.json.gz"), ks.load(DATA / "graphs.pt.trace.json.gz"))
    spec = c.chart().to_dict()
    bars = next(pd.DataFrame(v) for v in spec["datasets"].values() if "change_ms" in pd.DataFrame(v))
    assert bars["change_ms"].tolist() == pytest.approx((c.kernels["change_us"] / 1e3).tolist())
    assert set(bars["status"]) == set(c.kernels["status"])


def test_charts_display_as_vegalite5_and_leave_other_charts_alone(mlp):
    bundle, _ = mlp.chart("backends")._repr_mimebundle_()
    assert set(bundle) == {charts.VEGALITE5_MIME, "text/plain"}
    assert bundle[charts.VEGALITE5_MIME]["$schema"] == charts.VEGALITE5_SCHEMA
    other = alt.Chart(pd.DataFrame({"a": [1, 2]})).mark_bar().encode(x="a")
    theirs = other._repr_mimebundle_()
    theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    assert charts.VEGALITE5_MIME not in theirs and "text/html" in theirs     # altair's default, as before


def test_a_renderer_the_user_chose_wins(mlp):
    alt.renderers.enable("json")
    bundle = mlp.chart("kernels")._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert charts.VEGALITE5_MIME not in bundle and "application/json" in bundle
    assert alt.renderers.active == "json"


def test_importing_kernelscope_does_not_import_altair():
    import subprocess
    import sys
    code = "import sys, kernelscope; print('altair' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_charts_colour_each_backend_as_the_widget_does(mlp):
    """rep.chart(...) colours come from the one vocabulary the widget gets in its payload
    (altair's default palette once gave ATen another colour than the widget did)."""
    from kernelscope.analysis.backend_rules import BACKENDS, COPY_COLORS
    from kernelscope.analysis.timeline import CAUSES
    want = {**BACKENDS, **COPY_COLORS, **{f"idle: {c}": x.solid for c, x in CAUSES.items()}}
    for kind, field in (("backends", "backend"), ("kernels", "backend"), ("timeline", "what")):
        spec = mlp.chart(kind).to_dict()
        scale = spec["encoding"]["color"]["scale"]
        assert scale["domain"], kind
        assert dict(zip(scale["domain"], scale["range"])) == {d: want.get(d, BACKENDS["other"]) for d in scale["domain"]}, kind
        assert set(scale["domain"]) - {"copy"} <= set(want), kind
        _, (df,) = _data(mlp.chart(kind))
        assert set(df[field]) <= set(scale["domain"]), kind


def test_rocm_copies_share_their_kernels_lane():
    """On ROCm a stream's copies are drawn in the lane of its kernels (``rocm:0 s7``), labelled by
    the one device labeller: they once landed on ``cuda:0`` beside ``rocm:0``."""
    rep = ks.load(DATA / "copies_streams.pt.trace.json.gz")
    trace = rep.trace
    trace.devices["device_type"] = "ROCm"
    rocm = ks.Report(trace)
    assert set(rocm.copies["device"]) == {"rocm:0"} and set(rocm.kernels["device"]) == {"rocm:0"}
    _, (df,) = _data(rocm.chart("timeline"))
    lanes = set(df["lane"])
    assert lanes and all(lane.startswith("rocm:0") for lane in lanes), lanes
    copy_lanes = set(df.loc[df["what"].isin(["HtoD", "DtoH"]), "lane"])
    assert copy_lanes and copy_lanes <= {f"rocm:0 s{s}" for s in set(rocm.kernels["stream"]) | set(rocm.copies["stream"])}
