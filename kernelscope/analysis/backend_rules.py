"""The rules that say which library (backend) launched a kernel: data, read top to bottom.

Each :class:`Rule` is tried in order and the first whose every given condition matches wins.
A condition is a regular expression, searched (``re.search``) in the kernel name, the
launching CPU op, the launch API, Triton's ``kernel_backend`` op argument or the device type.
A missing value (no CPU op, say) is the empty string, so ``op=NO_OP`` asks for "no op".
The winning rule's ``id`` is stored in the ``backend_rule`` column so that a user can see why a
kernel got its label. To add a rule, put it above the first rule that would wrongly catch your
kernel, give it an ``example`` (a real name; the tests check it), and run
``pytest tests/test_backends.py``.

``tensor_cores`` is what the rule knows about matrix-unit use (True, False, None = unknown);
with ``tc_by_name`` the name hints below (:data:`TENSOR_CORE_HINTS`) decide first.
"""
from __future__ import annotations

from typing import NamedTuple

NO_OP = r"^$"
# Ops whose kernels come from the BLAS library even when the name says CUTLASS (cuBLAS ships
# CUTLASS-built kernels) or says nothing at all (splitKreduce, gemv2T, ...).
BLAS_OPS = (r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|_addmm_activation|addmv|mv|dot|vdot|"
            r"_scaled_mm|_int_mm|addr|outer|einsum|tensordot|cublas\w*)$")
CONV_OPS = r"^aten::(cudnn_\w+|_cudnn\w*|convolution\w*|_convolution\w*|conv\w*|miopen_\w+|_miopen\w*)$"
FLASH_OPS = r"^aten::(_flash_attention\w*|_scaled_dot_product_flash\w*)$"
MEM_EFF_OPS = r"^aten::(_efficient_attention\w*|_scaled_dot_product_efficient\w*)$"
FFT_OPS = r"^aten::(_fft\w*|fft_\w+|stft|istft)$"
COMM_OPS = r"^(nccl:|c10d::|record_param_comms)"


# The backend vocabulary: every label a rule may give, with the colour every view draws it in
# (tables, charts, the timeline; the browser gets this table in the view's payload). Adding a
# backend is one line here (tests/test_backends.py checks that every rule's label is listed).
BACKENDS: dict[str, str] = {
    "cuBLAS": "#4e79a7", "cuDNN": "#f28e2b", "CUTLASS": "#59a14f", "Triton": "#e15759",
    "CuPy": "#76b7b2", "ATen": "#edc948", "NCCL": "#b07aa1", "FlashAttention": "#ff9da7",
    "cuFFT": "#9c755f", "cuRAND": "#bab0ac", "CUB": "#8cd17d", "Numba": "#86bcb6",
    "memcpy": "#d37295", "memset": "#fabfd2", "rocBLAS": "#4e79a7", "hipBLASLt": "#a0cbe8",
    "MIOpen": "#ffbe7d", "CK": "#499894", "other": "#9d9d9d",
}
# Copies on the timeline: memcpy by direction, and memset.
COPY_COLORS: dict[str, str] = {"HtoD": BACKENDS["memcpy"], "DtoH": "#b6992d", "DtoD": "#499894",
                               "memset": BACKENDS["memset"]}


class Rule(NamedTuple):
    id: str
    backend: str
    example: str
    why: str
    name: str | None = None
    op: str | None = None
    launch_api: str | None = None
    kernel_backend: str | None = None
    device_type: str | None = None
    tensor_cores: bool | None = None
    tc_by_name: bool = False


RULES: tuple[Rule, ...] = (
    # -- what the launcher told us --------------------------------------------------------
    Rule("triton-arg", "Triton", "triton_red_fused_gelu_sum_0",
         "Inductor's CPU-side event carries kernel_backend=triton", kernel_backend=r"(?i)^triton$"),
    # -- names only one library uses --------------------------------------------------------
    Rule("nccl", "NCCL", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
         "NCCL/RCCL collectives are named nccl*Kernel_<Op>",
         name=r"nccl\w*Kernel", tensor_cores=False),
    Rule("rocclr-fill", "memset", "__amd_rocclr_fillBufferAligned.kd",
         "HIP runtime's blit kernels for hipMemset", name=r"^__amd_rocclr_fill", tensor_cores=False),
    Rule("rocclr-copy", "memcpy", "__amd_rocclr_copyBuffer",
         "HIP runtime's blit kernels for hipMemcpy", name=r"^__amd_rocclr_copy", tensor_cores=False),
    Rule("inductor-name", "Triton", "triton_red_fused_gelu_sum_0",
         "Inductor names its Triton kernels triton_<kind>_...", name=r"^triton_"),
    Rule("cudnn-nontc", "cuDNN", "void cudnn::batchnorm_fwtr_nhwc_semiPersist<__half, float, __half, 512, 16, 5, "
         "4, 1, 0, false, false, true, 2>(cudnn::NhwcBatchNormFwdParams<__half, float>)",
         "cuDNN's normalization and layout kernels run on the CUDA cores",
         name=r"cudnn::(\w+::)*(batchnorm|bn_|ops::|\w*[Nn]orm)|bn_(fw|bw)_|"
              r"nhwcAddPaddingKernel|nhwcToNchwKernel|nchwToNhwcKernel", tensor_cores=False),
    Rule("cudnn-name", "cuDNN",
         "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
         "cuDNN kernels carry cudnn in the name or in their argument types",
         name=r"cudnn|CUDNN", tc_by_name=True),
    Rule("cudnn-conv-name", "cuDNN", "implicit_convolveNd_hhgemm",
         "cuDNN's convolution kernels (implicit/precomputed GEMM, Winograd, FFT, direct)",
         name=r"convolve\w*_[a-z]*gemm|_convolve_|xmma_(fprop|dgrad|wgrad)|winograd|"
              r"conv2d_grouped_direct|wgrad2d_grouped|dgrad2d_grouped|fft2d_[rc]2[rc]|scalePackedTensor",
         tc_by_name=True),
    Rule("cublas-nvjet", "cuBLAS", "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN",
         "nvjet_* are cuBLAS(Lt)'s JIT-built GEMMs (tensor-core only)", name=r"^nvjet_", tensor_cores=True),
    Rule("cublas-cutlass", "cuBLAS", "void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_"
         "128x2_tn_align2>(cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align2::Params)",
         "cuBLAS ships CUTLASS-built kernels named cutlass_<sm>_...; CUTLASS's own library names omit the sm",
         name=r"cutlass_[1-9]\d+_(tensorop|wmma|simt|\w+gemm)", tc_by_name=True),
    Rule("cublas-name", "cuBLAS",
         "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_"
         "execute_kernel__5x_cublas",
         "cuBLAS's own kernel families: <arch>_<type>gemm, xmma gemm ..._cublas, gemv, gemmSN, splitKreduce",
         name=r"cublas|^(maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell)_\w*gemm|"
              r"^sm\d+_xmma_gemm|gemmSN_|gemmk1_kernel|gemv2[NT]_kernel|gemvx?_kernel|"
              r"splitKreduce_kernel|fermi[A-Z]?[a-z]?gemm|gemmBatched|gemm_kernel\dx\d",
         tc_by_name=True),
    Rule("flash-attention", "FlashAttention", "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, bfloat16_t>>, 0, 0, 0, 0, 1, 1, 0, 0>(Flash_fwd_params)",
         "FlashAttention 2/3 (and PyTorch's vendored copy) name their kernels flash_fwd/bwd or flash::",
         name=r"flash_(fwd|bwd)|flash::|[Ff]lash[Aa]ttn|flash_attn|Flash_(fwd|bwd)_\w*kernel",
         tensor_cores=True),
    Rule("cutlass-mem-efficient", "CUTLASS", "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
         "memory-efficient attention (xFormers' kernels, vendored in ATen) is built on CUTLASS",
         name=r"fmha_cutlass|MemEffAttention|AttentionBackwardKernel|AttentionKernel<", tc_by_name=True),
    Rule("cutlass", "CUTLASS", "cutlass_tensorop_s1688gemm_tf32_256x128_16x3_tt_align4",
         "CUTLASS kernels compiled into the application (not inside cuBLAS)",
         name=r"cutlass|CUTLASS", tc_by_name=True),
    Rule("cub", "CUB", "void cub::DeviceRadixSortOnesweepKernel<int, (bool)0>(T1 *, int)", "CUB device-wide primitives (also when ATen calls them)",
         name=r"(?<!\w)cub::", tensor_cores=False),
    # -- ATen's own kernels, by name (after CUB and CUTLASS, which ATen also launches) ----
    Rule("aten-name", "ATen", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
         "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
         "kernels in the at:: namespace (and the old THC/THCUNN ones) are PyTorch's own",
         name=r"at::(native|cuda)::|^_ZN2at(6native|4cuda)|c10::cuda|^void kernelPointwiseApply|THC|"
              r"softmax_warp_(forward|backward)|cunn_\w+", tensor_cores=False),
    Rule("cufft", "cuFFT", "void vector_fft<4096u, EPT<16u>, 1u, 5u, (padding_t)70, (twiddle_t)0, "
         "(loadstore_modifier_t)2, (layout_t)0, unsigned int, float, HostConfigPlaceholder>(kernel_arguments_t"
         "<unsigned int>)", "cuFFT's kernel families",
         name=r"(regular|vector|composite_\w*|bluestein\w*)_fft\b|cufft|[sd]pRadix\d|"
              r"(pre|post)processing_kernel\b|fft_\w*kernel", tensor_cores=False),
    Rule("curand", "cuRAND", "generate_seed_pseudo(__int64, __int64, __int64, curandOrdering, "
         "curandStateXORWOW*, unsigned int*)", "cuRAND's generator kernels",
         name=r"curand|generate_seed_pseudo|gen_sequenced\b", tensor_cores=False),
    Rule("cupy-name", "CuPy", "cupy_copy__float32_complex64",
         "CuPy names its generated kernels cupy_*/cupyx_*", name=r"^(void )?cupyx?_", tensor_cores=False),
    Rule("numba", "Numba", "cudapy::__main__::foo$241(Array<__int64, int=1, C, mutable, aligned>)",
         "Numba's @cuda.jit kernels live in the cudapy namespace",
         name=r"cudapy", tensor_cores=False),
    Rule("hipblaslt-tensile", "hipBLASLt",
         "Custom_Cijk_Alik_Bljk_BBS_BH_Bias_AS_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_K1_MIWT4_16_WSGRB2_DTVA",
         "Tensile-built GEMMs with UserArgs or a bias/scale-vector epilogue are hipBLASLt's (rocBLAS has neither)",
         name=r"^(Custom_)?Cijk_\w*(UserArgs|_Bias|_SAV)|(?i:hipblaslt)", tc_by_name=True),
    Rule("rocblas-tensile", "rocBLAS", "Cijk_Alik_Bljk_HHS_MT128x128x32_MI16x16x16x1",
         "Tensile-built GEMMs (Cijk_...) and rocblas_* kernels", name=r"^(Custom_)?Cijk_|(?i:rocblas)",
         tc_by_name=True),
    Rule("ck", "CK", "ck::kernel_gemm_xdl_cshuffle_v3_multi_d",
         "Composable Kernel (ck::, ck_tile::)", name=r"(?<!\w)ck(_tile)?::|^kernel_gemm_xdl",
         tc_by_name=True),
    Rule("miopen", "MIOpen", "MIOpenBatchNormFwdTrainSpatial",
         "MIOpen's kernels (OpenCL/HIP/asm solvers)",
         name=r"MIOpen|miopen|^naive_conv_|^igemm_|ConvAsm|gridwise_convolution|^Im2Col|^SubSample|"
              r"^transpose_NCHW2CNHW|^batched_transpose|^SubTensorOp|^Op[1-5]dTensorGeneric", tc_by_name=True),
    # -- the launching op decides (names above said nothing) ---------------------------------
    Rule("blas-op", "cuBLAS", "gemv2T_kernel_val",
         "a GEMM-like ATen op launched it and CUDA's BLAS is cuBLAS(Lt)", op=BLAS_OPS,
         device_type=r"^(CUDA|)$", tc_by_name=True),
    Rule("blas-op-rocm", "rocBLAS", "void rocblas_gemvt_kernel", "a GEMM-like ATen op on ROCm",
         op=BLAS_OPS, device_type=r"^ROCm$", tc_by_name=True),
    Rule("conv-op", "cuDNN", "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x128x64_"
         "warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
         "a cuDNN convolution/normalization op launched it", op=CONV_OPS, device_type=r"^(CUDA|)$",
         tc_by_name=True),
    Rule("conv-op-rocm", "MIOpen", "igemm_fwd_gtcx3_nhwc_fp16_bx0_ex0_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64_gkgs",
         "a convolution op on ROCm runs MIOpen", op=CONV_OPS, device_type=r"^ROCm$", tc_by_name=True),
    Rule("flash-op", "FlashAttention", "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, bfloat16_t>>, 0, 0, 0, 0, 1, 1, 0, 0>(Flash_fwd_params)",
         "ATen's flash-attention op launched it", op=FLASH_OPS, tensor_cores=True),
    Rule("mem-efficient-op", "CUTLASS", "fmha_cutlassF_bf16_aligned_64x128_rf_sm80",
         "ATen's memory-efficient attention is built on CUTLASS", op=MEM_EFF_OPS, tc_by_name=True),
    Rule("fft-op", "cuFFT", "void regular_fft<192u, EPT<12u, 16u>, 16u, 2u, (padding_t)6, (twiddle_t)0, (loadstore_modifier_t)2, (layout_t)1, unsigned int, double, HostConfigPlaceholder>(kernel_arguments_t<unsigned int>)", "an FFT op launched it", op=FFT_OPS,
         tensor_cores=False),
    Rule("comm-op", "NCCL", "ncclKernel_AllReduce_RING_LL_Sum_half(ncclWorkElem)",
         "a c10d/NCCL collective launched it", op=COMM_OPS, tensor_cores=False),
    Rule("aten-op", "ATen", "void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, "
         "false>(float*, float const*, int, int, int, bool const*, int, bool)",
         "an ATen op launched it through the CUDA runtime: PyTorch's own kernel",
         op=r"^aten::", launch_api=r"^(cuda|hip)\w*Launch", tensor_cores=False),
    # -- no op: the launch API is the last hint -----------------------------------------------
    Rule("driver-ex-no-op", "Triton", "add_kernel",
         "launched through cuLaunchKernelEx outside any ATen op: Triton 3's launcher does this "
         "(CuPy uses cuLaunchKernel); an inference, not a certainty",
         name=r"^[A-Za-z_]\w*$", op=r"^(?!aten::)", launch_api=r"^cuLaunchKernelEx$"),
    Rule("driver-no-op", "CuPy", "ks_saxpy",
         "launched through cuLaunchKernel outside any ATen op: CuPy's RawKernel/ElementwiseKernel do this "
         "(Inductor's Triton kernels, which also do, are caught above by kernel_backend); an inference",
         name=r"^[A-Za-z_]\w*$", op=r"^(?!aten::)", launch_api=r"^cuLaunchKernel$"),
    Rule("fallback", "other", "void matrixMulCUDA<int=32>(float*, float*, float*, int, int)",
         "no rule matched"),
)

# Name fragments that say whether a kernel runs on the matrix units. False hints first.
# (Case-sensitive on purpose: re.IGNORECASE made these alternations 20x slower on long names.)
# cuBLAS/CUTLASS/cuDNN name their CUDA-core paths (simt, ffma, sgemm) explicitly.
TENSOR_CORE_HINTS: tuple[tuple[str, bool], ...] = (
    (r"_simt_|ffma|dfma|(?<![a-z])[sdcz]gemm|Cgemm|gemv|gemmSN|gemmk1|splitKreduce|"
     r"_(scal|dot|axpy|nrm2|asum)_kernel|^(kepler|maxwell|pascal)_|batchnorm|BatchNorm|^SubTensorOp|^Op[1-5]dTensor",
     False),
    # Tensile names its matrix-core kernels _MI<shape>_; without it the GEMM runs on the SIMDs.
    (r"^Cijk_(?!\w*_MI\d)", False),
    (r"nvjet|wgmma|gmma|hmma|imma|dmma|_tensorop|tensorop_|tensor\d{3,4}|wmma|[shi]884|[shi]1688|[shi]16816|"
     r"s161616|i8816|i8832|i16832|tf32|bf16|_f16|f16f16|fp16|_fp8|e4m3|e5m2|_MI\d+x\d+|xdl|mfma|"
     r"flash_fprop|flash_bprop|gtcx", True),
)
