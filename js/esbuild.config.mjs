// Builds the anywidget bundle (one self-contained ES module + its CSS) into kernelscope/static.
import * as esbuild from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";

const out = new URL("../kernelscope/static/", import.meta.url);
await mkdir(out, { recursive: true });
// widget.js: the anywidget module; report.js: the same view for plain pages (benchmarks, export).
for (const [entry, name] of [["./src/widget.js", "widget.js"], ["./src/standalone.js", "report.js"]]) {
  await esbuild.build({
    entryPoints: [new URL(entry, import.meta.url).pathname],
    bundle: true,
    format: "esm",
    minify: true,
    target: ["es2020"],
    outfile: new URL(name, out).pathname,
    legalComments: "linked",
    loader: { ".css": "text" },
    logLevel: "warning",
  });
}
await copyFile(new URL("./src/view/style.css", import.meta.url), new URL("widget.css", out));
