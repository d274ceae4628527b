// Number formatting shared by every panel (mirrors kernelscope.render.text.fmt_us).

export function fmtUs(us) {
  if (us === null || us === undefined || Number.isNaN(us)) return "-";
  const a = Math.abs(us);
  if (a >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (a >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
  return `${us.toFixed(1)} us`;
}

export function fmtPct(x, digits = 1) {
  if (x === null || x === undefined || Number.isNaN(x)) return "-";
  return `${(x * 100).toFixed(digits)}%`;
}

export function fmtBytes(b) {
  if (b === null || b === undefined || Number.isNaN(b)) return "-";
  if (b >= 1 << 30) return `${(b / (1 << 30)).toFixed(1)} GiB`;
  if (b >= 1 << 20) return `${(b / (1 << 20)).toFixed(1)} MiB`;
  if (b >= 1024) return `${(b / 1024).toFixed(1)} KiB`;
  return `${b} B`;
}

export function fmtInt(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "-";
  return Math.round(n).toLocaleString("en-US");
}

export function fmtNum(x, digits = 2) {
  if (x === null || x === undefined || Number.isNaN(x)) return "-";
  return Number(x).toFixed(digits);
}

/** Create an element; text goes in as textContent, never as markup. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "style") el.style.cssText = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// One colour per backend label of DESIGN.md, the same in every chart and the timeline.
export const BACKEND_COLORS = {
  cuBLAS: "#4e79a7", cuDNN: "#f28e2b", CUTLASS: "#59a14f", Triton: "#e15759", CuPy: "#76b7b2",
  ATen: "#edc948", NCCL: "#b07aa1", FlashAttention: "#ff9da7", cuFFT: "#9c755f", cuRAND: "#bab0ac",
  CUB: "#8cd17d", Numba: "#86bcb6", memcpy: "#d37295", memset: "#fabfd2", rocBLAS: "#4e79a7",
  hipBLASLt: "#a0cbe8", MIOpen: "#ffbe7d", CK: "#499894", other: "#9d9d9d",
  cuSOLVER: "#2f5d87", cuSPARSE: "#7f9fc7", MAGMA: "#1f3b57", XLA: "#8e6c8a", Helion: "#c44e52",
  TensorRT: "#76b900", "TensorRT-LLM": "#4d7a00", TransformerEngine: "#9acd32", FBGEMM: "#d4a6c8",
  Apex: "#b6992d", Liger: "#f1ce63", FlashInfer: "#d37295",
};

export function backendColor(b) {
  return BACKEND_COLORS[b] || BACKEND_COLORS.other;
}
