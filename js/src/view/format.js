// Number formatting shared by every panel (mirrors kernelscope.units: fmt_us, fmt_bytes), and
// the vocabulary the view draws with.

/** `x` with `digits` decimals as Python's format() writes it: an exact half rounds to even
 * (12.5 -> "12"), where toFixed rounds it up ("13"). */
export function toFixedEven(x, digits) {
  const m = 10 ** digits;
  const y = x * m;
  if (Math.abs(y % 1) !== 0.5) return x.toFixed(digits);
  const lo = Math.floor(y);
  return ((lo % 2 === 0 ? lo : lo + 1) / m).toFixed(digits);
}

export function fmtUs(us) {
  if (us === null || us === undefined || Number.isNaN(us)) return "-";
  const a = Math.abs(us);
  if (a >= 1e6) return `${toFixedEven(us / 1e6, 2)} s`;
  if (a >= 1e3) return `${toFixedEven(us / 1e3, 2)} ms`;
  return `${toFixedEven(us, 1)} us`;
}

/** A share (0..1) as a percent; `scale` 100 for a value already in percent (kernelscope.units.fmt_pct). */
export function fmtPct(x, digits = 1, scale = 1) {
  if (x === null || x === undefined || !Number.isFinite(x)) return "-";
  return `${toFixedEven(scale === 1 ? x * 100 : x * (100 / scale), digits)}%`;
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

/** A number with `digits` decimals and thousands separators ("4,644.0"), as fmtInt. */
export function fmtNum(x, digits = 2) {
  if (x === null || x === undefined || Number.isNaN(x)) return "-";
  return Number(x).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
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

// The vocabulary (backend colours, copy and host colours, idle-gap causes, occupancy limiters,
// the Nsight Compute metrics shown beside ours) is not copied here: Python sends it in the
// payload header (kernelscope.view.vocabulary) and renderReport installs it.
let VOCAB = {};
// What a name missing from the vocabulary (or a payload written before it travelled) is drawn in.
export const NEUTRAL = "#999";

export function useVocabulary(v) {
  VOCAB = v && typeof v === "object" ? v : {};
}

/** One table of the vocabulary: backends, copies, host, causes, limiters ({}), ncu ([]). */
export function vocab(key) {
  return VOCAB[key] || (key === "ncu" ? [] : {});
}

/**
 * A colour from the payload, as the view may apply it: "#rgb", "#rrggbb" or "#rrggbbaa" (the
 * see-through idle gaps), else `fallback`. The payload of a saved notebook is untrusted and
 * colours go into style attributes and SVG fills: anything else ("red;position:fixed",
 * "url(https://...)") must never reach them. tests/test_vocabulary.py checks that every colour
 * Python sends has one of these forms.
 */
const COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/;
export function safeColor(c, fallback = NEUTRAL) {
  return typeof c === "string" && COLOR.test(c) ? c : fallback;
}

export function backendColor(b) {
  const c = vocab("backends");
  return safeColor(c[b], safeColor(c.other));
}

export function causeColor(cause) {
  const c = vocab("causes");
  return safeColor((c[cause] || c.unknown || {}).color);
}

// One class-name token: no space, so a value can add one class and never a second (jp-Dialog).
const TOKEN = /^[A-Za-z0-9_-]+$/;

/**
 * ` ${prefix}${value}` when `value` is one class-name token and one of `set` (a list, or an
 * object's keys: a closed set Python sends, kernelscope/view/vocabulary.py), else "". A saved
 * notebook's payload is untrusted: text like "x jp-Dialog" must not add JupyterLab's classes.
 */
export function classFrom(set, value, prefix) {
  const names = Array.isArray(set) ? set : Object.keys(set || {});
  return typeof value === "string" && TOKEN.test(value) && names.includes(value) ? ` ${prefix}${value}` : "";
}

/** The class of a finding's severity badge: plain "ks-sev" for a severity Python never sends. */
export function sevClass(severity) {
  return `ks-sev${classFrom(vocab("severities"), severity, "ks-sev-")}`;
}
