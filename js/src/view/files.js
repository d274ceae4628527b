// Handing data to the user from the view: a file download (CSV export, the raw trace for
// Perfetto) and the clipboard (a kernel's full name). Both work on a plain page, in the widget
// and in JupyterLab's renderer, with no server round trip. The raw trace's bytes come from the
// host (kernelscope/view/widget.py: raw_trace_bytes, or the JupyterLab server); the CSV rows from
// table_stats.js.

/** Save `data` (string, ArrayBuffer, typed array or Blob) as a file named `name`. */
export function download(name, data, type = "application/octet-stream") {
  const blob = data instanceof Blob ? data : new Blob([data], { type });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  // The browser has started the download by now; free the object URL a little later.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Put `text` on the clipboard; resolves to true when it got there. */
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Permission refused: fall back to the selection-based copy below.
  }
  // Pages served over plain http (a notebook server on another host) have no Clipboard API.
  const ta = document.createElement("textarea");
  ta.value = text;
  ta.setAttribute("readonly", "");
  ta.style.cssText = "position:fixed;left:-9999px;top:0;opacity:0";
  document.body.append(ta);
  ta.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  ta.remove();
  return ok;
}

/** One CSV field: quoted when it holds a comma, quote or line break (RFC 4180). Text that a
 * spreadsheet would run as a formula (=, +, -, @ first: recorded names are untrusted) gets a
 * leading apostrophe, as OWASP advises; numbers stay numbers. */
export function csvField(v) {
  if (v === null || v === undefined || (typeof v === "number" && Number.isNaN(v))) return "";
  let s = String(v);
  if (typeof v === "string" && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Rows (arrays) as CSV text with a header line. */
export function toCSV(header, rows) {
  return `${[header, ...rows].map((r) => r.map(csvField).join(",")).join("\r\n")}\r\n`;
}

/** A file-name-safe stem of a report title ("run.pt.trace.json.gz" -> "run"). */
export function fileStem(title) {
  const base = String(title || "kernelscope").replace(/\.(pt\.trace|ksreport)?\.json(\.gz)?$/i, "");
  return base.replace(/[^\w.-]+/g, "_").slice(0, 80) || "kernelscope";
}
