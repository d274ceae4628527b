// The anywidget module (kernelscope/static/widget.js), written by js/esbuild.config.mjs around
// the bundled report view (src/widget.js), which travels gzipped and base64-encoded inside it:
// anywidget saves this module's text into the state of every displayed widget, so into the
// notebook file when widget state is saved. Inflated and imported once per page and version.
const VIEW = "__KERNELSCOPE_VIEW__";
const KEY = "__KERNELSCOPE_KEY__";

function load() {
  if (!globalThis.__kernelscope_views) globalThis.__kernelscope_views = {};
  const cache = globalThis.__kernelscope_views;
  if (!cache[KEY]) {
    cache[KEY] = (async () => {
      const bin = atob(VIEW);
      const u8 = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
      const text = await new Response(new Blob([u8]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
      // As anywidget itself loads a module: from a Blob URL.
      const url = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
      try {
        return (await import(url)).default;
      } finally {
        URL.revokeObjectURL(url);
      }
    })();
  }
  return cache[KEY];
}

export default {
  async render(ctx) {
    let view;
    try {
      view = await load();
    } catch (err) {
      ctx.el.textContent = `kernelscope: cannot load the report view (${err && err.message})`;
      return undefined;
    }
    return view.render(ctx);
  },
};
