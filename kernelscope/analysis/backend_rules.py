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

import re
from typing import NamedTuple

from kernelscope.trace.onnxruntime import PROVIDERS

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
# torch.linalg's factorizations and solvers: on CUDA they call cuSOLVER (or MAGMA, caught by name).
LINALG_OPS = (r"^aten::(_?linalg_(qr|svd|svdvals|eig\w*|cholesky\w*|lu\w*|solve\w*|inv\w*|lstsq|det|slogdet|"
              r"ldl_\w+|householder_product)|cholesky\w*|_cholesky\w*|lu_\w+|_lu_\w+|triangular_solve|geqrf|orgqr|"
              r"ormqr|inverse|_inverse_helper|svd|_svd_helper|qr|det|logdet|slogdet|_det_lu_based_helper|"
              r"lstsq|eig|symeig|_symeig_helper)$")


# The one backend vocabulary: every label a rule may give, in display order, with the colour
# every view draws it in (tables, charts, the timeline; the browser gets this table in the view's
# payload). ``other`` means "no rule matched". Adding a backend is one line here
# (tests/test_backends.py checks that every rule's label is listed; tests/test_vocabulary.py that
# no two labels share a colour, so a colour names one backend, copy direction or cause).
BACKENDS: dict[str, str] = {
    "cuBLAS": "#4e79a7", "cuDNN": "#f28e2b", "CUTLASS": "#59a14f", "Triton": "#e15759",
    "Helion": "#c44e52", "CuPy": "#76b7b2", "ATen": "#edc948", "NCCL": "#b07aa1",
    "FlashAttention": "#ff9da7", "FlashInfer": "#a55194", "cuFFT": "#9c755f", "cuRAND": "#bab0ac",
    "CUB": "#8cd17d", "cuSOLVER": "#2f5d87", "cuSPARSE": "#7f9fc7", "MAGMA": "#1f3b57",
    "XLA": "#8e6c8a", "TensorRT": "#76b900", "TensorRT-LLM": "#4d7a00", "TransformerEngine": "#9acd32",
    "FBGEMM": "#d4a6c8", "Apex": "#9c9c3a", "DeepSpeed": "#17becf", "vLLM": "#30a2da", "Liger": "#f1ce63", "Numba": "#86bcb6",
    "memcpy": "#d37295", "memset": "#fabfd2", "rocBLAS": "#6b8fbf", "hipBLASLt": "#a0cbe8",
    "MIOpen": "#ffbe7d", "CK": "#2f7f7a",
    # ONNX Runtime's execution providers (trace/onnxruntime.py PROVIDERS): ORT's own kernels on
    # each device, and the libraries other providers hand a subgraph to (TensorRT above).
    "ORT CPU": "#6a3d9a", "ORT CUDA": "#3b8f3b", "ORT ROCm": "#b15928", "ORT WebGPU": "#1f9e89",
    "MIGraphX": "#e31a1c", "CoreML": "#8a8a8a", "DirectML": "#0b6fb8", "OpenVINO": "#5c2d91",
    "XNNPACK": "#c7a76c", "oneDNN": "#00a3e0", "QNN": "#d62f7b", "NNAPI": "#3ddc84", "CANN": "#c00000",
    "Vitis AI": "#ed1c24", "ACL": "#0091bd",
    "other": "#9d9d9d",
}
# Copies on the timeline: memcpy by direction, and memset.
COPY_COLORS: dict[str, str] = {"HtoD": BACKENDS["memcpy"], "DtoH": "#b6992d", "DtoD": "#499894",
                               "memset": BACKENDS["memset"]}


# ONNX Runtime's execution providers (their backend label and device type): the reader's table,
# trace/onnxruntime.py PROVIDERS; each label is one of BACKENDS above.
_PROVIDER_KEYS = {k.lower(): v for k, v in PROVIDERS.items()}


def provider_backend(provider) -> str | None:
    """The backend label of an ONNX Runtime execution provider (None: not a provider's name).

    >>> provider_backend("CUDAExecutionProvider"), provider_backend("cpuexecutionprovider"), provider_backend("x")
    ('ORT CUDA', 'ORT CPU', None)
    """
    hit = _PROVIDER_KEYS.get(provider.lower()) if isinstance(provider, str) else None
    return hit[0] if hit else None


def provider_device(provider) -> str:
    """The device type an ONNX Runtime execution provider runs its nodes on ("unknown" for a
    provider not in :data:`~kernelscope.trace.onnxruntime.PROVIDERS`).

    >>> provider_device("TensorrtExecutionProvider"), provider_device("MyEP")
    ('CUDA', 'unknown')
    """
    hit = _PROVIDER_KEYS.get(provider.lower()) if isinstance(provider, str) else None
    return hit[1] if hit else "unknown"


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
         "Inductor names its Triton kernels triton_<kind>_... (poi, red, per, tem, for, unk)",
         name=r"^triton_(poi|red|per|tem|for|unk|mm|bmm)_"),
    # Triton 2.x appended the specialization of each argument to the kernel's name: its index, then c
    # (equal to 1), d (divisible by 16), e (divisible by 8). Torch 2.0's Inductor kernels were all
    # named triton_ before it (triton__0d1d2d3d); a user kernel keeps its own name (add_kernel_0d1d2d3de).
    Rule("triton2-suffix", "Triton", "triton__0d1d2d3d",
         "Triton 2.x names a kernel <function>_<argument specializations>: 0d1d2de = arguments 0 and 1 "
         "divisible by 16, 2 by 16 and 8 (Triton 3 dropped the suffix)",
         name=r"^[A-Za-z_]\w*?_(?=[0-9]*[cde])0c?d?e?(\d+c?d?e?)*$"),
    Rule("helion", "Helion", "_helion_matmul",
         "a @helion.kernel: Helion compiles it to Triton and launches it through Triton's launcher, "
         "naming it _helion_<function>", name=r"^_helion_"),
    # Frameworks' own namespaces name the library even inside a generic ATen op (their kernels
    # often carry cutlass:: or at:: types in their template arguments, so these come first).
    Rule("vllm", "vLLM", "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2, true>(c10::BFloat16*, c10::BFloat16 const*, "
         "long, long, long, long, long, c10::BFloat16 const*, long, float, int, int)",
         "vLLM's own CUDA/HIP kernels (_C, _moe_C) live in the vllm:: namespace (its CUTLASS GEMMs too)",
         name=r"\bvllm::", tc_by_name=True),
    Rule("tensorrt-llm", "TensorRT-LLM", "void tensorrt_llm::kernels::generalRmsNorm",
         "TensorRT-LLM's kernels live in the tensorrt_llm:: namespace", name=r"tensorrt_llm::", tc_by_name=True),
    Rule("tensorrt", "TensorRT", "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize32x32x64_stage6_warpsize2x2x1_"
         "tensor16x8x16_aligna2_alignc2_execute_kernel_trt",
         "TensorRT engines' kernels: tactics end in _kernel_trt, Myelin's fused kernels are __myl_*",
         name=r"_kernel_trt$|^__myl_|^(sm\d+_)?trt_", tc_by_name=True),
    Rule("transformer-engine", "TransformerEngine", "void transformer_engine::normalization::rmsnorm_fwd_tuned_kernel",
         "NVIDIA Transformer Engine's kernels live in the transformer_engine:: namespace",
         name=r"transformer_engine::", tc_by_name=True),
    # FBGEMM's table-batched embedding (TBE) kernels live outside its namespace: the generated ones are
    # <prefix>_embedding<...>_codegen_<pass>_..., batch_index_select_dim0_codegen_...; the hand-written
    # helpers around them (index linearization and bounds checks, the LXU/LRU/LFU row caches, pooled
    # embedding permutes, optimizer updates) are named in TBE's own words. Only a kernel at global scope
    # counts (at::native::embedding_* is ATen's; current FBGEMM puts some in an anonymous namespace).
    Rule("fbgemm", "FBGEMM", "void fbgemm_gpu::permute_2D_lengths_kernel",
         "FBGEMM-GPU's kernels: the fbgemm_gpu:: namespace, its generated table-batched "
         "embedding kernels (split_embedding_*, dense_embedding_*, batch_index_select_dim0_*) and their "
         "helpers (linearize_index, bounds_check_indices, l[xru]u_cache_*, permute_pooled_embs...), which live outside it",
         name=r"fbgemm_gpu::|fbgemm::|^(void )?(nvshmem_)?(split|dense|batched|ssd)_embedding\w*_kernel|"
              r"^(void )?(\w+::)*\w*(embedding|index_select)\w*_codegen_\w+|"
              r"^(void )?(\(anonymous namespace\)::)?\w*(pooled_embs|multi_embs|linearize_(cache_)?ind(ex|ices)|bounds_check_indices|"
              r"l[xrf]u_(cache|update)|direct_mapped_\w*cache|cache_miss|recat_copy|weight_momentum|vbe_metadata|"
              r"row_addrs|cache_actions)\w*(<|\(|$)|^(void )?(\(anonymous namespace\)::)?(grad_mean\w*|split_\w+_update)_kernel\w*(<|\(|$)",
         tc_by_name=True),
    Rule("flashinfer", "FlashInfer", "BatchPrefillWithRaggedKVCacheKernel",
         "FlashInfer's attention kernels: the flashinfer:: namespace and its Batch/Single Prefill/Decode kernels",
         name=r"flashinfer::|^(void )?(Batch|Single)(Prefill|Decode)With\w*Kernel", tc_by_name=True),
    # DeepSpeed's kernels have no namespace. Its FusedAdam is adapted from Apex's: the old copy builds
    # the very same AdamFunctor<T> kernel (no name can tell them apart, so Apex, where it comes from,
    # gets it), the current one is templated on an index type (AdamFunctor<T, int|long>) and adds
    # MixedPrecisionAdamFunctor, which Apex does not have. Names other projects also use (fused_ln,
    # rms_norm, fused_bias_gelu...) count only in DeepSpeed's templated form.
    Rule("deepspeed", "DeepSpeed", "void gptj_residual_add<__half>(__half*, __half const*, __half const*, "
         "__half const*, __half const*, int, int, float)",
         "DeepSpeed's inference/training kernels (csrc/transformer, FastGen's ragged ops, FusedLamb) and its "
         "FusedAdam's index-typed AdamFunctor",
         name=r"^(void )?(gptj_residual_add|fused_residual_ln|pre_rms_norm|apply_rotary_pos_half|attn_softmax_v2|"
              r"(bias|pad)_add_transform_0213|moe_res_matmul|pad_head_seq_kernel|fused_gate_activation|"
              r"lamb_cuda_kernel_part\d|kv_rotary_pos_kernel|fused_bias_residual_layer_norm)\b|"
              r"^(void )?fused_bias_(gelu|add|residual|relu)<(__half|__nv_bfloat16|float)>\(|"
              r"^(void )?(fused_ln|rms_norm)<(__half|__nv_bfloat16|float), \d+, \d+, \d+>\(|"
              r"^(void )?multi_tensor_apply_kernel<TensorListMetadata<\d>, (MixedPrecisionAdamFunctor<|"
              r"AdamFunctor<[\w:]+, (int|long)>)", tensor_cores=False),
    Rule("apex", "Apex", "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, "
         "float, float, float, float, float, adamMode_t, float>",
         "NVIDIA Apex's fused optimizers and layer norm (multi_tensor_apply_kernel outside ATen's namespace, "
         "cuApplyLayerNorm...); the old DeepSpeed FusedAdam builds this same kernel (see the deepspeed rule)",
         name=r"^(void )?multi_tensor_apply_kernel<|^(void )?cu(Apply(Layer|RMS)Norm|ComputePartGrad\w*|"
              r"ComputeGrad(Input|GammaBeta)\w*)\b|apex::", tensor_cores=False),
    Rule("liger", "Liger", "_rms_norm_forward_kernel",
         "Liger Kernel's Triton kernels (liger_*, _rms_norm_/_swiglu_/_geglu_tanh_/_layer_norm_/_tv_distance_..._kernel)",
         name=r"^(liger_\w+|_(rms_norm|swiglu|geglu_tanh|layer_norm|group_norm|jsd|tvd|tv_distance|kldiv|dyt|poly_norm|"
              r"fused_add_rms_norm)_\w*kernel\w*|_triton_(rope|qwen2vl_mrope|llama4_rope))$"),
    Rule("cusparse", "cuSPARSE", "void cusparse::csrmv_v3_kernel<std::integral_constant<bool, false>, int, int, "
         "float, float, float, float, void>(cusparse::KernelCoeffs<float>, int const*, int const*, int const*, "
         "float const*, int, int, int, float const*, float*, int*, float*)",
         "cuSPARSE's kernels: the cusparse:: namespace (even inside aten::addmm) and its format conversions",
         name=r"cusparse|^(void )?(convert_(Coo|Csr|Csc)To\w+_kernel|coo(mm|mv)_\w*kernel|csr2csc\w*|"
              r"bsr(mm|mv|xmv|sv2|sm2|ilu02|ic02?)\w*|csric0\w*|csrsv2_\w+|prune_(csr|dense)_core|"
              r"csrmm_alg\d|csrmv_v\d)\b", tc_by_name=True),
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
    Rule("cublas-blas23", "cuBLAS", "void trsm_ln_kernel<float, 32u, 32u, 4u, true>(int, int, float const*, int, "
         "float*, int, float, float const*, int, int*)",
         "cuBLAS's level-2/3 and batched-LAPACK kernels whose arguments do not say cublas (trsm, trmm, trsv, "
         "getrfBatched, MAGMA-derived bdmm/lds128 GEMMs, gemvNSP): their symbols are in libcublas/libcublasLt",
         name=r"^(void )?(trsm_\w*kernel|kernel_trsm_\w+|dtrsv_init\w*|trsv_l[nt]_exec\w*|trmm\w*_kernel|"
              r"magma_(bdmm|lds128_\w+|sgemmBiasEx)_\w*kernel|gemvNSP_kernel|batch_trsm_\w+kernel|"
              r"[sdcz]gemm_largek\w*|batch_gemm_kernel\w*|laswp_kernel(_reverse)?|geqr2_batch_kernel\w*|"
              r"geqrSolve_batch_kernel|getr[fi]_(1x|2x|panel|semiwarp|kernelWarp)|matinv_kernelWarp|"
              r"rotm?g_\w*kernel_ref|symv_(lo|up)_direct_kernel)\b", tc_by_name=True),
    Rule("cusolver", "cuSOLVER", "void geqr2_smem_domino_fast<float, float, 8, 512>(int, int, float*, int, "
         "float*, int*, int*)",
         "cuSOLVER's LAPACK kernels (geqr2, larft, potrf, getrf, syevj, gesvdj, sytrd, laed, ...): every "
         "family here is a kernel symbol of libcusolver",
         name=r"^(void )?(\(anonymous namespace\)::)?((batch_)?(geqr[2f]|larf[bgt]|lacpy|lascl|lansy|laswp_kernel2|orgqr|ormqr|potrf|"
              r"getrf|getf2|getrs|gesvd[ajpb]?|gebd2|gebrd|labrd|sytrd\d?|syev[bdj]|steqr|stedc|laed\d|lasr|"
              r"gehd2|gebal|ipiv|create_pivot|xxtrf\d?|xx_set_info|offA|FnrmA|syevj|pegasus|cuds_|"
              r"gemmcn_skinny|svd_|colperm|column_rotate|row_rotate|setup_vhat|shift_householder|scale_max|"
              r"copy_info_kernel|batch_eye_kernel|batch_symmetrize|cusolver|latrd|sytd2|ormql|lacgv|xlange|"
              r"xlaset|lapack_|[ds]laed4|getf4|qr_|csrqr|glu_|iglu_|rfcsrsv2|spcsrsv2|sulu_|supernode_|"
              r"LDinv_UDinv|unblocked_)\w*|merge_ker<|"
              r"(merge_ker|epilogue|transpose|kernel)<\w*(sytrd|stedc|getrf\w*)_params)", tensor_cores=False),
    Rule("magma", "MAGMA", "magma_iset_pointer_kernel(int**, int*, int, int, int, int)",
         "MAGMA's kernels ([sdcz]<lapack>_kernel, magma_*/magmablas_*), as torch.linalg runs them when "
         "its MAGMA backend is chosen", name=r"^(void )?(magma(blas)?_\w+|[sdcz](laswp|getf2|getrf|geqr2|potf2|gemm|lacpy|laset|"
              r"transpose|swap|scal_[sdcz]ger[uc]?|displace_pointers|computecolumn|trsm|trtri)\w*_kernel\w*|"
              r"kernel_[sdcz]set_pointer\w*)\b", tensor_cores=False),
    Rule("cublas-name", "cuBLAS",
         "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_"
         "execute_kernel__5x_cublas",
         "cuBLAS's own kernel families: <arch>_<type>gemm, xmma gemm ..._cublas, gemv, gemmSN, splitKreduce, "
         "and the Kepler-era sgemm_sm35_ldg_*/sgemm_sm_heavy_* (TensorFlow and cuDNN's FFT convolutions still run them)",
         name=r"cublas|^(maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell)_\w*gemm|"
              r"^sm\d+_xmma_gemm|gemmSN_|gemmk1_kernel|gemv2[NT]_kernel|gemvx?_kernel|"
              r"splitKreduce_kernel|fermi[A-Z]?[a-z]?gemm|gemmBatched|gemm_kernel\dx\d|"
              r"^[sdczh]gemm_(\w+_)?sm(\d+|_heavy)_",
         tc_by_name=True),
    Rule("flash-attention-aux", "FlashAttention", "flash::prepare_varlen_num_blocks_kernel(int, int, int, const int *, "
         "const int *, const int *, const int *, const int *, const int *, int, int, int, int, int, "
         "cutlass::FastDivmod, cutlass::FastDivmod, int *, int *, bool)",
         "FlashAttention's helper kernels (FA3's tile-scheduler pre-pass and split-KV combine, FA2's dO.O row "
         "sums and dQ conversion) do no matrix math",
         name=r"flash::(prepare_varlen_num_blocks|FlashAttnFwdCombine)|flash_bwd_(dot_do_o|convert_dq)_kernel",
         tensor_cores=False),
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
         name=r"(regular|vector|composite_\w*|bluestein\w*)_fft(_\w+)?\b|cufft|[sd]pRadix\d|"
              r"(pre|post)processing_kernel\b|fft_\w*kernel", tensor_cores=False),
    Rule("curand", "cuRAND", "generate_seed_pseudo(__int64, __int64, __int64, curandOrdering, "
         "curandStateXORWOW*, unsigned int*)", "cuRAND's generator kernels",
         name=r"curand|generate_seed_pseudo|gen_sequenced\b", tensor_cores=False),
    Rule("xla-fusion", "XLA", "input_reduce_fusion",
         "XLA (JAX, TensorFlow) names its generated kernels after the HLO fusion (fusion_5, "
         "loop_add_fusion, input_reduce_fusion, gemm_fusion_dot_general_1, wrapped_convert)",
         name=r"^((loop|input)_\w+_)?fusion(_\d+)*$|^(gemm|triton_gemm|cudnn|triton_softmax)_fusion\w*$|"
              r"^\w+_fusion(_\d+)*$|^wrapped_[a-z]\w*$", op=NO_OP, tc_by_name=True),
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
    Rule("xla-arg", "XLA", "sort_6_1",
         "JAX's own profiler tagged it with an XLA HLO op (kernel_backend=xla) and no library rule above "
         "matched: an XLA-generated kernel", kernel_backend=r"^xla$", tc_by_name=True),
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
    Rule("linalg-op", "cuSOLVER", "void kernel<getrf_wo_pivot_params_<float, 0, 256, 1, 64, 64, 68, 8, 1, 1> >"
         "(int, int, void*, int, void*, int, int, int, int, int, int*)",
         "a torch.linalg factorization or solve launched it and no name rule matched: torch calls cuSOLVER "
         "for these on CUDA", op=LINALG_OPS, device_type=r"^(CUDA|)$", tensor_cores=False),
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


def cpu_op_backend(name: str, kernel_backend: str = "") -> str:
    """The framework a CPU op belongs to (the CPU rows of ``rep.backends``), by the same patterns
    the kernel rules use for the ops that launch kernels (``COMM_OPS`` for collectives).

    >>> cpu_op_backend("aten::mm"), cpu_op_backend("record_param_comms"), cpu_op_backend("nccl:all_reduce")
    ('ATen', 'NCCL', 'NCCL')
    >>> cpu_op_backend("triton_poi_fused_add_0", "triton"), cpu_op_backend("MyModule.forward")
    ('Triton', 'other')
    """
    if kernel_backend.lower() == "triton":
        return "Triton"
    if (label := provider_backend(kernel_backend)) is not None:
        return label
    if re.match(COMM_OPS, name):
        return "NCCL"
    if name.startswith("aten::"):
        return "ATen"
    return "other"
