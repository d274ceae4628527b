"""Issue 45, item 2: names you can tell apart. On real names: cuDNN's CUTLASS convolutions that
no demangler takes (Holistic Trace Analysis's test traces), Inductor kernels of recorded compiled
models, ATen's elementwise kernels of recorded eager runs."""
import csv

from kernelscope.analysis.names import short_name, unique_short_names
from tests.conftest import DATA


def _hta_names(word):
    with open(DATA / "hta" / "kernel_names.csv", newline="", encoding="utf-8") as f:
        return [r["name"] for r in csv.DictReader(f) if word in r["name"]]


def test_a_mangled_name_no_demangler_takes_is_read_as_far_as_it_can_be():
    names = _hta_names("ImplicitGemmConvolution")
    assert len(names) == 2 and all(len(n) > 1600 and n.startswith("_Z") for n in names)
    assert [short_name(n) for n in names] == ["CUTLASS conv wgrad 128x128 (tf32)",
                                              "CUTLASS conv wgrad 64x128 (tf32)"]
    assert sorted(unique_short_names(names).values()) == ["CUTLASS conv wgrad 128x128 (tf32)",
                                                          "CUTLASS conv wgrad 64x128 (tf32)"]
