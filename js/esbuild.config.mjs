// Builds the anywidget bundle (one self-contained ES module + its CSS) into kernelscope/static.
import * as esbuild from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";

const out = new URL("../kernelscope/static/", import.meta.url);
await mkdir(out, { recursive: true });
await esbuild.build({
  entryPoints: [new URL("./src/widget.js", import.meta.url).pathname],
  bundle: true,
  format: "esm",
  minify: true,
  target: ["es2020"],
  outfile: new URL("widget.js", out).pathname,
  legalComments: "linked",
  logLevel: "warning",
});
await copyFile(new URL("./src/view/style.css", import.meta.url), new URL("widget.css", out));
