"""The workload of notebook 8: a Triton matmul autotuned over a dozen configs, and a better space.

``NAIVE_CONFIGS`` is the kind of space one writes first: every tile from 16 to 256, one to eight
warps, two to five stages, with no thought for registers or occupancy. ``BETTER_CONFIGS`` is
what the table of the first tuning suggests (see the notebook). Needs CUDA and Triton.
"""
import torch
import triton
import triton.language as tl


def _cfg(m, n, k, warps, stages, group=8):
    return triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": group},
                         num_warps=warps, num_stages=stages)


NAIVE_CONFIGS = [
    _cfg(16, 16, 32, 1, 2), _cfg(32, 32, 32, 1, 3), _cfg(64, 64, 32, 2, 2), _cfg(64, 64, 64, 4, 3),
    _cfg(128, 64, 32, 4, 4), _cfg(64, 128, 32, 4, 4), _cfg(128, 128, 32, 4, 3), _cfg(128, 128, 64, 8, 3),
    _cfg(128, 256, 32, 8, 3), _cfg(256, 128, 32, 2, 2), _cfg(256, 64, 64, 4, 5), _cfg(32, 64, 128, 2, 2),
]
BETTER_CONFIGS = [
    _cfg(128, 128, 64, 8, 3), _cfg(128, 256, 64, 8, 3), _cfg(256, 128, 64, 8, 3), _cfg(128, 128, 64, 4, 4),
    _cfg(128, 256, 32, 8, 4), _cfg(128, 64, 64, 4, 4),
]


def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        mask_k = rk < K - k * BLOCK_K
        acc += tl.dot(tl.load(a, mask=mask_k[None, :], other=0.0), tl.load(b, mask=mask_k[:, None], other=0.0))
        a += BLOCK_K * sak
        b += BLOCK_K * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def make_matmul(configs):
    """A matmul ``f(a, b)`` whose Triton kernel is autotuned over ``configs`` for each (M, N, K).

    >>> mm = make_matmul(NAIVE_CONFIGS)                       # doctest: +SKIP
    """
    # A JITFunction of its own per space, so that each tuning starts from an empty cache.
    kernel = triton.autotune(configs=configs, key=["M", "N", "K"])(triton.jit(matmul_kernel))

    def matmul(a, b):
        M, K = a.shape
        _, N = b.shape
        c = torch.empty((M, N), device=a.device, dtype=torch.float16)

        def grid(meta):
            return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1))
        return c
    matmul.kernel = kernel
    return matmul
