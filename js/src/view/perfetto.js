// "Perfetto": the raw Chrome trace a report came from, for Perfetto (ui.perfetto.dev) or any
// tool that reads Kineto traces. What the view can do depends on where it runs:
// - the trace file is reachable (a JupyterLab file tab reads it from the server; the live widget
//   asks Python for the file ks.load read or --trace wrote): download it, or open it in
//   ui.perfetto.dev, which this page hands the bytes to with Perfetto's postMessage protocol
//   (the trace goes from this tab to that one, it is not uploaded; the Perfetto page itself
//   needs the internet);
// - a saved report with no kernel: the view says where the file was and how to open it;
// - a report recorded in memory (no --trace): the view says how to keep the trace next time.
// The payload says which (header.raw_trace: kernelscope/view/report.py); `source.fetch()` is the
// host's way to get the bytes (report.js passes what the widget, kernelscope/view/widget.py:
// raw_trace_bytes, or the JupyterLab tab gives it).
import { h } from "./format.js";
import { download, copyText } from "./files.js";

export const PERFETTO = "https://ui.perfetto.dev";

/** The toolbar button and its panel. source: { fetch: () => Promise<{ name, bytes }> } or null. */
export function perfettoButton(header, source) {
  const raw = header.raw_trace || null;
  const panel = h("div", {
    class: "ks-perfetto",
    style: "display:none",
    role: "dialog",
    "aria-label": "open in Perfetto",
  });
  const status = h("div", { class: "ks-perfetto-status" });
  const say = (text) => {
    status.textContent = text;
  };
  const canFetch = !!(source && source.fetch) && !!raw && raw.exists !== false;
  const get = async () => {
    const got = await source.fetch();
    if (!got || !got.bytes) throw new Error((got && got.error) || "the trace file could not be read");
    return got;
  };
  if (canFetch) panel.append(...fetchable(raw, get, say));
  else if (raw) panel.append(...pathOnly(raw, say));
  else {
    panel.append(
      h("p", {
        text:
          "No Chrome trace was kept for this report: it was recorded in memory. "
          + "Record with `%%kernelprofile --trace step.pt.trace.json.gz` (or ks.profile(trace_path=...)) to keep one; "
          + "this button then downloads it or opens it in ui.perfetto.dev.",
      })
    );
  }
  panel.append(status);
  const button = h("button", {
    class: "ks-btn ks-perfetto-button",
    text: "Perfetto…",
    "aria-expanded": "false",
    title: "the raw trace for Perfetto (ui.perfetto.dev)",
    onclick: () => {
      const open = panel.style.display === "none";
      panel.style.display = open ? "" : "none";
      button.setAttribute("aria-expanded", String(open));
    },
  });
  return h("span", { class: "ks-perfetto-wrap" }, button, panel);
}

/** The panel of a trace this host can read (`get()`): download it, or open it in ui.perfetto.dev. */
function fetchable(raw, get, say) {
  return [
    h(
      "p",
      {},
      "Raw trace: ",
      h("code", { text: raw.name, title: raw.path }),
      " (the Chrome trace this report was read from)."
    ),
    h(
      "div",
      { class: "ks-perfetto-actions" },
      h("button", {
        class: "ks-btn ks-perfetto-download",
        text: "download",
        onclick: async () => {
          say("reading the trace…");
          try {
            const t = await get();
            download(t.name || raw.name, t.bytes);
            say(`saved ${t.name || raw.name}`);
          } catch (err) {
            say(`cannot read the trace: ${err.message}`);
          }
        },
      }),
      h("button", {
        class: "ks-btn ks-perfetto-open",
        text: "open in ui.perfetto.dev",
        onclick: () => openInPerfetto(get, raw.name, say),
      })
    ),
    h("p", {
      class: "ks-note",
      text:
        "ui.perfetto.dev runs in your browser: this page passes the trace to it, nothing is uploaded. "
        + "Offline, download the file and open it in a Perfetto UI you run yourself (or load it with ks.load).",
    }),
  ];
}

/** The panel of a trace this host cannot read (a saved report, no kernel): where it is, how to open it. */
function pathOnly(raw, say) {
  return [
    h(
      "p",
      {},
      "Raw trace: ",
      h("code", { text: raw.path }),
      raw.exists === false ? " (no longer there)." : " (on the machine that ran the kernel)."
    ),
    h("p", {
      text:
        "To open it: go to ui.perfetto.dev, choose “Open trace file” and pick that file (Perfetto reads it in "
        + "the browser). With the kernel running, this button downloads it or opens it there directly.",
    }),
    h("button", {
      class: "ks-btn ks-perfetto-copy",
      text: "copy path",
      onclick: async () => say((await copyText(raw.path)) ? "path copied" : "copy failed"),
    }),
  ];
}

/**
 * Open ui.perfetto.dev in a new tab and hand it the trace: Perfetto's documented deep-linking
 * protocol (post 'PING' until the page answers 'PONG', then post {perfetto: {buffer, title,
 * fileName}}). The tab opens first, inside the click, so that popup blockers allow it.
 */
export function openInPerfetto(get, name, say = () => {}, origin = PERFETTO) {
  const win = window.open(`${origin}/#!/`);
  if (!win) {
    say("the browser blocked the new tab: allow pop-ups for this page, or download the trace");
    return null;
  }
  say("opening ui.perfetto.dev…");
  let bytes = null,
    ready = false,
    done = false;
  const send = () => {
    if (done || !bytes || !ready) return;
    done = true;
    const buffer =
      bytes instanceof ArrayBuffer ? bytes : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    win.postMessage({ perfetto: { buffer, title: name, fileName: name } }, origin);
    say(`sent ${name} to ui.perfetto.dev`);
  };
  const onMsg = (e) => {
    if (e.source !== win || e.data !== "PONG") return;
    ready = true;
    stop();
    send();
  };
  const timer = setInterval(() => {
    try {
      win.postMessage("PING", origin);
    } catch {
      /* not loaded yet */
    }
  }, 100);
  const giveUp = setTimeout(() => {
    if (!done) {
      stop();
      say("ui.perfetto.dev did not answer (offline?): download the trace instead");
    }
  }, 60_000);
  function stop() {
    clearInterval(timer);
    window.removeEventListener("message", onMsg);
    if (ready || done) clearTimeout(giveUp);
  }
  window.addEventListener("message", onMsg);
  get().then(
    (t) => {
      bytes = t.bytes;
      send();
    },
    (err) => {
      stop();
      clearTimeout(giveUp);
      say(`cannot read the trace: ${err.message}`);
    }
  );
  return win;
}
