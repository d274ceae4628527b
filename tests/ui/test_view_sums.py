"""The figures the browser sums itself over what the user selected (docs/architecture.md, "Where
the browser adds up"), each checked against the same figure computed in Python from a real H200
recording (a Llama training step): the details panel of a selection, the kernel table's group
headers, a timeline range's summary (GPU busy per device, copies, idle, costliest kernels), and
the warp-stall shares of several kernels (a cell recorded with Proton's live sampling)."""
import json

import pytest

import kernelscope as ks
from kernelscope.units import fmt_us
from kernelscope.view.bundle import mime_payload
from tests.conftest import DATA, written_out_union
from tests.ui.test_view_page import serve_page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    rep = ks.load(DATA / "wild" / "llama_train.pt.trace.json.gz")
    (root / "llama.json").write_text(json.dumps(mime_payload(rep)))
    (root / "live.json").write_text(json.dumps(mime_payload(ks.load(DATA / "counters" / "live_counters.ksreport.json.gz"))))
    with serve_page(root) as url:
        yield url, rep


def show(page, url, name="llama"):
    page.goto(f"{url}/index.html")
    page.wait_for_function("typeof window.show === 'function'")
    page.evaluate(f"window.show('{name}.json')")
    page.locator(".ks-root").wait_for()


def _kv(page, label):
    return page.locator(f".ks-kv tr:has(th:text-is('{label}')) td").first.inner_text()


def test_details_of_a_selection_sum_its_launches(site, page):
    url, rep = site
    show(page, url)
    s = rep.summary()
    for names in (s["name"].iloc[:1].tolist(), s["name"].iloc[1:3].tolist()):
        page.evaluate(f"window.ctl.setSelection({json.dumps(names)})")
        k = rep.kernels[rep.kernels["name"].isin(names)]["duration_us"]
        assert _kv(page, "launches") == f"{len(k):,}"
        assert _kv(page, "total / mean") == f"{fmt_us(k.sum())} / {fmt_us(k.mean())}"
        assert _kv(page, "min / max") == f"{fmt_us(k.min())} / {fmt_us(k.max())}"
        if len(names) == 1:   # one kernel: the same figures as rep.summary()
            row = s.iloc[0]
            assert _kv(page, "total / mean") == f"{fmt_us(row['total_us'])} / {fmt_us(row['mean_us'])}"
    assert not page.errors, page.errors


def test_group_headers_sum_their_rows(site, page):
    url, rep = site
    show(page, url)
    page.locator(".ks-group-by").select_option("backend")
    k = rep.kernels
    by = k.groupby("backend")["duration_us"]
    want = {b: f"{k.loc[k['backend'] == b, 'name'].nunique()} kernels · {by.size()[b]:,} launches · "
               f"{fmt_us(by.sum()[b])} · {by.sum()[b] / k['duration_us'].sum() * 100:.1f}% of kernel time" for b in by.groups}
    headers = page.locator(".ks-row.ks-group").all_inner_texts()
    assert headers
    for text in headers:
        label, stats = text.split("\n")[:2]
        assert stats == want[label[2:]], (label, stats)
    # Largest group first, as Python orders them.
    assert headers[0].split("\n")[0][2:] == by.sum().idxmax()
    assert not page.errors, page.errors


def test_a_timeline_range_sums_what_ran_in_it(site, page):
    url, rep = site
    show(page, url)
    page.locator(".ks-tab[data-tab='Timeline']").click()
    t0, t1 = 8000.0, 12000.0
    page.evaluate(f"window.ctl.timeline.showRange({t0}, {t1})")
    s = page.evaluate("(() => { const s = window.ctl.timeline.selection.summary;"
                      " return { devices: s.devices, copies: s.copies, copyTime: s.copyTime, idle: s.idle,"
                      " top: s.top.map((x) => [x.name, x.us]) }; })()")

    def inside(t):
        end = t["start_us"] + t["duration_us"]
        t = t[(end >= t0) & (t["start_us"] <= t1)]
        return t, (t["start_us"].clip(lower=t0), (t["start_us"] + t["duration_us"]).clip(upper=t1))

    k, (ks_, ke) = inside(rep.kernels)
    c, (cs, ce) = inside(rep.copies)
    # Times reach the browser as whole nanoseconds: half a ns per end.
    tol = 1e-3 * (len(k) + len(c) + 1)
    assert s["copies"] == len(c) and s["copyTime"] == pytest.approx((ce - cs).clip(lower=0).sum(), abs=tol)
    for d in s["devices"]:
        iv = list(zip(ks_[k["device"] == d["device"]], ke[k["device"] == d["device"]]))
        iv += list(zip(cs[c["device"] == d["device"]], ce[c["device"] == d["device"]]))
        busy = written_out_union(iv)
        assert d["busy"] == pytest.approx(busy, abs=tol)
        assert d["share"] == pytest.approx(busy / (t1 - t0), abs=1e-6)
    g = rep.timeline.gaps
    idle = (g["end_us"].clip(upper=t1) - g["start_us"].clip(lower=t0)).clip(lower=0).sum()
    assert s["idle"] == pytest.approx(idle, abs=tol)
    per_name = (ke - ks_).clip(lower=0).groupby(k["name"]).sum().sort_values(ascending=False)
    assert [n for n, _ in s["top"]] == per_name.index[:3].tolist()
    assert [us for _, us in s["top"]] == pytest.approx(per_name.iloc[:3].tolist(), abs=tol)
    assert not page.errors, page.errors


def test_stall_shares_of_several_kernels_weigh_by_samples(site, page):
    url, _ = site
    rep = ks.load(DATA / "counters" / "live_counters.ksreport.json.gz")
    show(page, url, "live")
    st = rep.stalls[rep.stalls["name"].str.startswith("nvjet")]
    assert len(st) >= 2
    page.evaluate(f"window.ctl.setSelection({json.dumps(st['name'].tolist())})")
    rows = page.locator(".ks-stalls tr[data-reason]")
    rows.first.wait_for()
    shown = {r.get_attribute("data-reason"): r.locator("td").inner_text().split()[0] for r in rows.all()}
    reasons = [c for c in st.columns if c in shown]
    assert reasons and f"{int(st['samples'].sum()):,} stall samples" in page.locator(".ks-stalls h4").inner_text()
    for reason in reasons:
        weighted = (st[reason] * st["samples"]).sum() / st["samples"].sum()
        assert shown[reason] == f"{weighted * 100:.0f}%", reason
    assert not page.errors, page.errors
