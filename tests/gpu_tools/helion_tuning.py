"""A Helion kernel tuned over three configs (module level: Helion refuses closures), for
record_tuning.py and tests/capture/test_gpu_tuning.py."""
import helion
import helion.language as hl
import torch


@helion.kernel(configs=[helion.Config(block_sizes=[b], num_warps=w) for b, w in ((128, 1), (1024, 4), (4096, 8))])
def scale_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = x[tile] * 2.0 + y[tile]
    return out
