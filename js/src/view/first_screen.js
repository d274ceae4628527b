// The report's first screen: the title, the headline tiles (wall time, GPU busy, launches,
// kernels, kernel time, copies, CPU ops: the payload's `stats`, kernelscope/view/report.py) and
// the ledger line (`completeness`, kernelscope/analysis/completeness.py), and
// the list of what to fix first, ranked by the time at stake (the payload's `fixes`:
// kernelscope/analysis/priorities.py), each with links to its evidence and to the finding.
import { h, fmtUs, fmtPct, fmtInt, sevClass } from "./format.js";

/** The header of a report: title, devices, tiles, notes, and a slot for the fix list. */
export function header(model) {
  const hd = model.header;
  const devs = (hd.devices || [])
    .map((d) => `${d.name} (sm_${d.compute_major}${d.compute_minor}, ${d.num_sms} SMs)`)
    .join(", ");
  return h(
    "div",
    { class: "ks-header" },
    h(
      "div",
      { class: "ks-title" },
      h("span", { class: "ks-brand", text: "kernelscope" }),
      h("span", { class: "ks-source", text: hd.title || "", title: hd.title || "" }),
      hd.partial ? h("span", { class: "ks-badge ks-partial", text: "partial: the run stopped early" }) : null,
      devs ? h("span", { class: "ks-devices", text: devs }) : null
    ),
    tiles(hd),
    // The completeness ledger's line, as Python wrote it (analysis/completeness.py).
    hd.completeness && hd.completeness.line
      ? h("div", {
          class: hd.completeness.complete ? "ks-note ks-ledger" : "ks-note ks-ledger ks-ledger-missing",
          text: `recording: ${hd.completeness.line}`,
        })
      : null,
    (hd.stats || {}).no_gpu
      ? h("div", {
          class: "ks-note ks-no-gpu",
          text: "No GPU found: this run recorded CPU ops only (see the CPU ops tab).",
        })
      : null,
    h("div", { class: "ks-fixes-slot" }),
    (hd.notes || []).length
      ? h(
          "ul",
          { class: "ks-notes" },
          hd.notes.map((n) => h("li", { text: n }))
        )
      : null
  );
}

/** The headline figures, each a tile with what it counts in its title. */
function tiles(hd) {
  const s = hd.stats || {};
  const clock = s.wall_clock ? ` · ${s.wall_clock}` : "";
  const memsets = s.memsets || 0;
  const caps = hd.capabilities || {};
  // Only the tiles this report can fill (caps.tiles, from Python); older payloads: all of them.
  const shown = (t) => (!caps.tiles || caps.tiles.includes(t.getAttribute("data-tile")) ? t : null);
  const tile = (label, value, title, key) =>
    shown(
      h(
        "div",
        { class: "ks-tile", title, "data-tile": key || label },
        h("div", { class: "ks-tile-value", text: value }),
        h("div", { class: "ks-tile-label", text: label })
      )
    );
  return h(
    "div",
    { class: "ks-tiles" },
    tile(
      `wall time${clock}`,
      fmtUs(s.wall_us),
      {
        "CUDA events": "region wall time, measured by CUDA events recorded around the region on the GPU's streams",
        "profiler span":
          "region wall time: the profiler's span, start to end of the trace (it also holds the profiler's start-up)",
        "first to last event": "region wall time: from the first to the last recorded event (the trace holds no span)",
      }[s.wall_clock] || "region wall time",
      "wall time"
    ),
    tile("GPU busy", s.gpu_busy === null || s.gpu_busy === undefined ? "-" : fmtPct(s.gpu_busy), s.gpu_busy_note || ""),
    tile(
      "kernel launches",
      fmtInt(s.launches),
      `kernel launches only${s.copies ? `; the ${fmtInt(s.copies - memsets)} copies and ${fmtInt(memsets)} memsets are counted apart` : ""}`
    ),
    tile("kernels", fmtInt(s.kernels), "distinct kernel names"),
    tile("GPU kernel time", fmtUs(s.gpu_time_us), `sum of ${caps.durations || "kernel durations (CUPTI)"}`),
    tile(
      "copies + memsets",
      fmtInt(s.copies),
      `${fmtInt(s.copies - memsets)} copies and ${fmtInt(memsets)} memsets${s.copy_time_us ? `, ${fmtUs(s.copy_time_us)} in all` : ""}`
    ),
    tile("CPU ops", fmtInt(s.ops))
  );
}

/** The first screen: what to fix first, ranked by the time at stake (from the payload's "fixes"). */
export function fixList(hd, showEvidence, showFinding) {
  const fixes = hd.fixes || [];
  const all = (hd.findings || []).length;
  if (!fixes.length) {
    // A payload from before the list travelled: its top finding, as it was shown then.
    const top = (hd.findings || [])[0];
    return h(
      "div",
      { class: "ks-fixes ks-fixes-none" },
      top ? [h("span", { class: sevClass(top.severity), text: top.severity || "" }), " ", top.title] : "No findings."
    );
  }
  const timed = fixes.some((f) => f.cost_us != null);
  return h(
    "div",
    { class: "ks-fixes" },
    h(
      "div",
      { class: "ks-fixes-head" },
      h("b", { text: timed ? "What to fix first" : "What the run says" }),
      timed
        ? h("span", {
            class: "ks-note",
            // The words are Python's (analysis/replay.py: capabilities); older payloads: a run's.
            text: ` · time at stake: ${(hd.capabilities || {}).stake || "GPU time the cause costs (computed by kernelscope from the trace), and its share of the wall time"}`,
          })
        : null,
      all > fixes.length
        ? h("a", {
            class: "ks-fixes-all",
            href: "#",
            text: ` · all ${all} findings`,
            onclick: (e) => {
              e.preventDefault();
              showFinding(-1);
            },
          })
        : null
    ),
    h(
      "ol",
      { class: "ks-fix-list" },
      fixes.map((f) => fixItem(f, showEvidence, showFinding))
    )
  );
}

/** One fix: severity, time at stake, title, cause, fix, note, and its links. */
function fixItem(f, showEvidence, showFinding) {
  return h(
    "li",
    { class: "ks-fix", "data-kind": f.kind || "" },
    h(
      "div",
      { class: "ks-fix-head" },
      h("span", { class: sevClass(f.severity), text: f.severity || "" }),
      f.cost_text ? h("span", { class: "ks-fix-cost", text: f.cost_text }) : null,
      f.share_text ? h("span", { class: "ks-fix-share", text: f.share_text }) : null,
      h("span", { class: "ks-fix-title", text: f.title || "" })
    ),
    f.cause
      ? h("div", { class: "ks-fix-line ks-fix-cause" }, h("span", { class: "ks-fix-label", text: "Cause" }), f.cause)
      : null,
    f.fix
      ? h("div", { class: "ks-fix-line ks-fix-fix" }, h("span", { class: "ks-fix-label", text: "Fix" }), f.fix)
      : null,
    f.note
      ? h("div", { class: "ks-fix-line ks-fix-note" }, h("span", { class: "ks-fix-label", text: "Note" }), f.note)
      : null,
    h(
      "div",
      { class: "ks-fix-links" },
      f.link
        ? h("a", {
            class: "ks-fix-evidence",
            href: "#",
            "data-view": f.link.view || "",
            text: `${f.link.label || "evidence"} →`,
            onclick: (e) => {
              e.preventDefault();
              showEvidence(f.link, f.finding);
            },
          })
        : null,
      f.link ? " · " : null,
      h("a", {
        class: "ks-fix-more",
        href: "#",
        text: "the finding in full",
        onclick: (e) => {
          e.preventDefault();
          showFinding(f.finding);
        },
      })
    )
  );
}
