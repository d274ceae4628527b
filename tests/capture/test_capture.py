"""ks.profile and the live-profiler reader, on real torch.profiler recordings of CPU ops.

GPU paths are in test_gpu_capture.py (run on the H200).
"""
import os
import threading

import pytest

torch = pytest.importorskip("torch")

import kernelscope as ks
from kernelscope.capture import ProfilerBusyError, active
from kernelscope.capture.lines import LineMarks, is_cell_file, line_sources
from kernelscope.capture.live import kineto_results, route, trace_from_profiler
from kernelscope.capture.repeats import per_repeat_totals, repeat_windows

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
NO_CUDA = not torch.cuda.is_available()


def _work(n):
    a = torch.ones(32, 32)
    for _ in range(n):
        a = torch.mm(a, a) * 0.01
    return a


def _count(rep, name):
    return int((rep.ops["name"] == name).sum())


def test_profile_records_cpu_ops_and_marks_no_gpu():
    with ks.profile() as prof:
        _work(7)
    rep = prof.report
    assert isinstance(rep, ks.Report)
    assert _count(rep, "aten::mm") == 7
    assert _count(rep, "aten::mul") == 7
    assert rep.meta["partial"] is False
    assert rep.meta["capture_route"] == route(kineto_results(prof.torch_profiler))
    if NO_CUDA:
        assert rep.meta["no_gpu"] is True
        assert rep.meta["cuda_event_us"] is None
        assert any("no CUDA device found" in n for n in rep.notes)
        assert len(rep.kernels) == 0
    # shapes are recorded by default
    mm = rep.ops[rep.ops["name"] == "aten::mm"].iloc[0]
    assert mm["input_dims"][:2] == [[32, 32], [32, 32]]
    assert active() is None


def test_in_memory_and_tmpfs_routes_give_the_same_tables():
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                record_shapes=True, with_stack=True) as p:
        _work(5)
    if route(kineto_results(p)) != "in-memory":
        pytest.skip("this torch has no trace_activities(): only the tmpfs route exists")
    a = trace_from_profiler(p, force_route="in-memory")
    b = trace_from_profiler(p, force_route="tmpfs")  # Kineto's own JSON writer, then our reader
    assert a.meta["capture_route"] == "in-memory" and b.meta["capture_route"] == "tmpfs"
    for table in ("ops", "frames"):
        x, y = getattr(a, table), getattr(b, table)
        assert len(x) == len(y) > 0
        for col in x.columns:
            if col == "start_us":
                assert (x[col] - y[col]).abs().max() < 0.01  # Kineto writes 3 decimals
            else:
                assert x[col].astype(str).tolist() == y[col].astype(str).tolist(), (table, col)
    assert abs(a.meta["time_origin_ns"] - b.meta["time_origin_ns"]) < 1000
    # The in-memory route leaves the recording exportable; the tmpfs one used the one save.
    with pytest.raises(ks.TraceError, match="already exported"):
        trace_from_profiler(p, force_route="tmpfs")


def test_tmpfs_route_saves_beside_the_temp_dir_when_dev_shm_is_small(monkeypatch, tmp_path):
    # A container's /dev/shm is often 64 MB: Kineto's one save would be cut there.
    import tempfile

    from kernelscope.capture import live
    monkeypatch.setattr(live, "SHM_MIN_FREE", 1 << 62)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert live._save_dir() is None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        _work(3)
    seen = []
    real_save = type(kineto_results(p)).save
    monkeypatch.setattr(type(kineto_results(p)), "save", lambda kr, path: (seen.append(path), real_save(kr, path)))
    t = trace_from_profiler(p, force_route="tmpfs")
    assert (t.ops["name"] == "aten::mm").sum() == 3
    assert seen and seen[0].startswith(str(tmp_path)) and not list(tmp_path.glob("kernelscope-*"))  # removed after


def test_load_accepts_a_stopped_torch_profiler():
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        _work(3)
    rep = ks.load(p)
    assert _count(rep, "aten::mm") == 3


def test_unstopped_profiler_is_a_clear_error():
    p = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    with pytest.raises(ks.TraceError, match="stop it first"):
        trace_from_profiler(p)


def test_exception_gives_partial_report_and_propagates():
    prof = ks.profile()
    with pytest.raises(ZeroDivisionError), prof:
        _work(4)
        1 / 0
    rep = prof.report
    assert rep.partial and rep.meta["partial"] is True
    assert rep.meta["error"].startswith("ZeroDivisionError")
    assert _count(rep, "aten::mm") == 4  # what ran before the error is kept
    assert active() is None


def test_keyboard_interrupt_stops_cleanly_and_next_profile_works():
    prof = ks.profile()
    with pytest.raises(KeyboardInterrupt), prof:
        _work(2)
        raise KeyboardInterrupt
    assert prof.report.partial
    assert not torch._C._autograd._profiler_enabled()
    with ks.profile() as again:
        _work(3)
    assert _count(again.report, "aten::mm") == 3


def test_nested_use_is_a_clear_error():
    with ks.profile() as outer:
        with pytest.raises(ProfilerBusyError, match="already recording"), ks.profile():
            pass
        _work(2)
    assert _count(outer.report, "aten::mm") == 2


def test_another_torch_profiler_active_says_how_to_stop_it():
    other = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    other.start()
    try:
        done = []
        t = threading.Thread(target=lambda: done.append(_try_profile()))
        t.start()
        t.join(30)  # no hang
        assert not t.is_alive()
        assert "another torch.profiler is already recording" in done[0]
    finally:
        other.stop()
    with pytest.raises(ProfilerBusyError, match=r"prof\.stop\(\)"):
        other2 = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        other2.start()
        try:
            ks.profile().start()
        finally:
            other2.stop()
    assert active() is None
    with ks.profile() as prof:  # works again once the other one stopped
        _work(1)
    assert _count(prof.report, "aten::mm") == 1


def _try_profile():
    try:
        with ks.profile():
            pass
        return "ran"
    except ProfilerBusyError as e:
        return str(e)


def test_decorator_keeps_the_last_report():
    @ks.profile()
    def step(n):
        return _work(n)

    out = step(3)
    assert out.shape == (32, 32)
    assert _count(step.report, "aten::mm") == 3
    step(5)
    assert _count(step.report, "aten::mm") == 5


def test_bare_decorator():
    @ks.profile
    def step():
        return _work(2)

    step()
    assert _count(step.report, "aten::mm") == 2


def test_lean_without_gpu_falls_back_to_cpu_ops():
    if not NO_CUDA:
        pytest.skip("this machine has a GPU")
    with ks.profile(lean=True) as prof:
        _work(2)
    assert _count(prof.report, "aten::mm") == 2
    assert any("lean mode needs a GPU" in n for n in prof.report.notes)


def test_line_marks_map_ops_to_the_exact_line(tmp_path):
    src = "a = torch.ones(8, 8)\nfor i in range(3):\n    a = torch.mm(a, a)\n\ndef f(x):\n    return torch.relu(x)\nb = f(a)\n"
    name = "<ipython-input-9-feedbeef>"
    code = compile(src, name, "exec")
    with ks.profile(lines_of=name) as prof:
        exec(code, {"torch": torch})
    ops = prof.report.ops
    real = ops[~ops["name"].str.startswith("kernelscope.")]
    where = dict(zip(real["name"], line_sources(real["tid"], real["start_us"], ops)))
    assert where["aten::ones"] == f"{name}(1): <module>"
    assert where["aten::mm"] == f"{name}(3): <module>"
    assert where["aten::relu"] == f"{name}(6): f"
    mm_lines = line_sources(real["tid"][real["name"] == "aten::mm"],
                            real["start_us"][real["name"] == "aten::mm"], ops)
    assert mm_lines == [f"{name}(3): <module>"] * 3
    # tracing is off again afterwards
    import sys
    assert sys.gettrace() is None or not isinstance(getattr(sys.gettrace(), "__self__", None), LineMarks)


def test_is_cell_file():
    assert is_cell_file("/tmp/ipykernel_4242/1234567.py")
    assert is_cell_file("<ipython-input-3-0123abcd>")
    assert not is_cell_file("/usr/lib/python3/dist-packages/foo.py")


def test_repeat_windows_and_launch_order_split():
    with ks.profile() as prof:
        for i in range(3):
            with prof.repeat(i):
                _work(2)
    reps = prof.report.meta["repeats"]
    assert reps["n"] == 3 and len(reps["cuda_event_us"]) == 3
    wins = repeat_windows(prof.report.ops)
    assert [w[2] for w in wins] == [0, 1, 2]
    assert all(a[1] <= b[0] for a, b in zip(wins, wins[1:]))  # disjoint, in order
    assert all(_ops_in(prof.report.ops, w, "aten::mm") == 2 for w in wins)
    # Without annotations (lean), kernels split in launch order: the launch-bound fixture is two
    # steps of 500 x (mul, add) = 2000 launches.
    rep = ks.load(os.path.join(DATA, "launch_bound.pt.trace.json.gz"))
    tot = per_repeat_totals(rep.kernels, rep.ops.iloc[0:0], 2)
    summ = rep.summary().set_index("name")["total_us"]
    assert len(tot) == 2
    for name, per in tot.items():
        assert len(per) == 2 and all(v > 0 for v in per)
        assert sum(per) == pytest.approx(summ[name])
    assert per_repeat_totals(rep.kernels, rep.ops.iloc[0:0], 3) == {}  # 2000 % 3 != 0


def _ops_in(ops, w, name):
    s = ops[ops["name"] == name]["start_us"]
    return int(((s >= w[0]) & (s <= w[1])).sum())


def test_live_report_meta_survives_save_and_load(tmp_path):
    with ks.profile() as prof:
        _work(2)
    prof.report.meta["repeats"] = {"n": 1, "per_kernel_total_us": {}}
    path = prof.report.save(tmp_path / "live.ksreport.json.gz")
    back = ks.load(path)
    for key in ("partial", "no_gpu", "cuda_event_us", "capture_route", "repeats"):
        assert back.meta[key] == prof.report.meta[key]
    assert _count(back, "aten::mm") == 2


def test_trace_path_writes_the_raw_chrome_trace(tmp_path):
    path = tmp_path / "cell.pt.trace.json.gz"
    with ks.profile(trace_path=path) as prof:
        _work(3)
    back = ks.load(path)  # Kineto's own JSON, through the file reader
    assert _count(back, "aten::mm") == _count(prof.report, "aten::mm") == 3
    # The report knows its raw trace: the view's "Perfetto" hands over that file.
    assert prof.report.meta["raw_trace"] == back.meta["raw_trace"] == str(path.resolve())


def test_fixture_recorded_with_stack_maps_kernels_to_cell_lines():
    # Recorded on the H200 through `%%kernelprofile --stack --trace` in a real IPython shell
    # (benchmarks/record_stack_fixture.py): the cell's lines 2-7 hold
    #   y = model(x) / z = norm(y) / for ...: / z = z * 0.5 + 1 / loss = ...pow(2).mean() / loss.backward()
    rep = ks.load(os.path.join(DATA, "kernelprofile_stack.pt.trace.json.gz"))
    k = rep.kernels
    lines = line_sources(k["launch_tid"], k["launch_start_us"], rep.ops)
    cell = "<ipython-input-1-7ee4b963e6e8>"
    main = k["launch_tid"] == k["launch_tid"].iloc[0]
    got = {}
    for op, src in zip(k["op"][main], [s for s, m in zip(lines, main) if m]):
        got.setdefault(op, []).append(src)
    assert len(k) == 28 and all(s is not None for s in lines)
    assert got == {
        "aten::addmm": [f"{cell}(2): <module>"] * 2, "aten::gelu": [f"{cell}(2): <module>"],
        "aten::native_layer_norm": [f"{cell}(3): <module>"],  # norm() is defined in another cell
        "aten::mul": [f"{cell}(5): <module>"] * 2, "aten::add": [f"{cell}(5): <module>"] * 2,
        "aten::pow": [f"{cell}(6): <module>"], "aten::mean": [f"{cell}(6): <module>"],
        "aten::fill_": [f"{cell}(7): <module>"],
    }
    # The backward kernels launch from autograd's own thread, while line 7 (loss.backward()) runs.
    back = [s for s, m in zip(lines, main) if not m]
    assert len(back) == 17 and set(back) == {f"{cell}(7): <module>"}


def test_fixture_report_of_a_mixed_cell_keeps_backends_and_cuda_events():
    # `%%kernelprofile` on a cell with a torch matmul, a CuPy ElementwiseKernel and a Triton
    # kernel, recorded on the H200 and saved with Report.save.
    rep = ks.load(os.path.join(DATA, "mixed_cell.ksreport.json.gz"))
    by = dict(zip(rep.kernels["name"], rep.kernels["backend"]))
    assert by["ks_add_kernel"] == "Triton" and by["ks_saxpy"] == "CuPy"
    gemm = [n for n in by if n.startswith("void cutlass::Kernel2<cutlass_80_simt_sgemm")]
    assert len(gemm) == 1 and by[gemm[0]] == "cuBLAS"
    tri = rep.kernels[rep.kernels["name"] == "ks_add_kernel"].iloc[0]
    assert (tri["grid_x"], tri["block_x"], tri["registers_per_thread"]) == (1024, 128, 26)
    assert rep.meta["cuda_event_us"] == pytest.approx(3442.688, abs=0.01)
    assert rep.meta["capture_route"] == "tmpfs" and rep.meta["partial"] is False
    assert rep.meta["cuda_event_us"] >= rep.kernels["duration_us"].sum()


def test_view_top_from_the_magic_shortens_the_text_view():
    rep = ks.load(os.path.join(DATA, "mlp_train.pt.trace.json.gz"))
    top_names = rep.summary()["short_name"].head(3).tolist()
    full = repr(rep)
    short = repr(rep.display(top=2))
    assert len(short.splitlines()) < len(full.splitlines())
    assert top_names[0] in short and top_names[1] in short


def test_title_names_where_the_recording_started(tmp_path):
    with ks.profile() as p:
        torch.ones(3) * 2
    line = p.report.title
    assert line.startswith("test_capture.py:") and int(line.split(":")[1]) > 0
    assert ks.profile(name="step A").title == "step A"

    @ks.profile
    def train_step():
        return torch.ones(3) + 1
    train_step()
    assert train_step.report.title.endswith("train_step")
    back = ks.load(p.report.save(tmp_path / "r.ksreport.json"))
    assert back.title == line


def test_stop_from_another_thread_is_handed_to_the_main_thread_that_started():
    """torch.profiler stopped from another thread stayed on (its callbacks are per thread): the
    report was empty and every later ks.profile was refused; then stop() there was refused. Now
    the stop is handed to the main thread that started the recording (it runs there while the
    main thread waits in join()), the other thread gets the report with everything in it, and
    later recordings start in any thread."""
    assert threading.current_thread() is threading.main_thread()
    p = ks.profile()
    p.start()
    torch.mm(torch.ones(4, 4), torch.ones(4, 4))
    got, errors = [], []

    def other():
        try:
            got.append(p.stop())
        except Exception as e:  # noqa: BLE001 - the test says what it was
            errors.append(repr(e))
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert not errors, errors
    rep = got[0]
    assert rep is p.report and int((rep.ops["name"] == "aten::mm").sum()) == 1
    assert not torch._C._autograd._profiler_enabled() and active() is None
    with pytest.raises(RuntimeError, match="not recording"):
        p.stop()
    with ks.profile() as q:                       # the next recording, in this thread
        torch.ones(4) + 1
    assert len(q.report.ops)
    later = []

    def record():
        with ks.profile() as r:                   # and in another
            torch.ones(4) * 3
        later.append(r.report)
    t = threading.Thread(target=record)
    t.start()
    t.join()
    assert later and int((later[0].ops["name"] == "aten::mul").sum()) == 1


def test_stop_from_another_thread_than_a_side_thread_that_started_is_refused_and_it_can_stop():
    """A recording started in another thread than the main one: no signal reaches that thread,
    so stop() elsewhere is refused before anything changes, and its own thread stops it."""
    p = ks.profile()
    started, stop_now, done = threading.Event(), threading.Event(), []

    def owner():
        p.start()
        torch.mm(torch.ones(4, 4), torch.ones(4, 4))
        started.set()
        stop_now.wait(30)
        done.append(p.stop())
    t = threading.Thread(target=owner)
    t.start()
    started.wait(30)
    with pytest.raises(RuntimeError, match="thread that started the recording"):
        p.stop()
    stop_now.set()
    t.join()
    assert int((done[0].ops["name"] == "aten::mm").sum()) == 1
    with ks.profile() as q:
        torch.ones(4) + 1
    assert len(q.report.ops)


def test_a_profiler_started_in_another_thread_is_named_when_the_report_comes_back_empty():
    """A torch.profiler run in another thread during a recording takes over Kineto's one
    session: the report is empty, and its note says which thread's profiler took it over
    (before: only that another profiler might have)."""
    p = ks.profile()
    p.start()
    torch.mm(torch.ones(4, 4), torch.ones(4, 4))

    def other():
        with torch.profiler.profile():
            torch.ones(3) + 1
    t = threading.Thread(target=other, name="data-loader-7")
    t.start()
    t.join()
    rep = p.stop()
    said = [n for n in rep.notes if "another torch.profiler was started in thread 'data-loader-7'" in n]
    assert said, rep.notes
    if len(rep.ops):
        assert "may be missing" in said[0]     # a torch that keeps the first session
    else:
        assert said[0].startswith("nothing was recorded") and "took it over" in said[0]
    # torch's own function is given back when the recording ends
    assert torch.autograd.profiler._run_on_profiler_start.__module__ == "torch.autograd.profiler"
    with ks.profile() as q:                       # and the next recording works
        torch.ones(4) + 1
    assert len(q.report.ops)
