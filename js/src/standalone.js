// Standalone entry (no Jupyter): the same report view for a plain page, e.g. the render
// benchmark or an exported HTML file. Renders a MIME payload into an element.
import { fromMime, fromPacked, MIME_TYPE } from "./view/data.js";
import { renderReport } from "./view/report.js";
import css from "./view/style.css";

export { fromMime, fromPacked, renderReport, MIME_TYPE };

/** Decode a MIME payload and render it; resolves to the view controller. */
export async function render(el, payload, opts = {}) {
  // A plain page has no widget manager to load our CSS: bring it along, once.
  if (!document.getElementById("kernelscope-style")) {
    const style = document.createElement("style");
    style.id = "kernelscope-style";
    style.textContent = css;
    document.head.append(style);
  }
  const view = await fromMime(payload);
  return renderReport(el, view, opts);
}
