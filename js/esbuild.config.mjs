// Builds kernelscope/static: widget.js (the anywidget module: a small loader holding the bundled
// report view gzipped, see src/widget_loader.js) and report.js (the same view for plain pages:
// benchmarks, tests, export).
import * as esbuild from "esbuild";
import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { gzipSync } from "node:zlib";

const out = new URL("../kernelscope/static/", import.meta.url);
const src = (p) => new URL(p, import.meta.url).pathname;
await mkdir(out, { recursive: true });
const common = {
  bundle: true,
  format: "esm",
  minify: true,
  target: ["es2020"],
  legalComments: "linked",
  loader: { ".css": "text" },
  logLevel: "warning",
};

await esbuild.build({
  ...common,
  entryPoints: [src("./src/standalone.js")],
  outfile: new URL("report.js", out).pathname,
});

const view = await esbuild.build({ ...common, entryPoints: [src("./src/widget.js")], write: false, outdir: "out" });
const code = view.outputFiles.find((f) => f.path.endsWith(".js")).contents;
const packed = gzipSync(code, { level: 9 }).toString("base64");
const key = createHash("sha256").update(code).digest("hex").slice(0, 16);
const loader = (await readFile(src("./src/widget_loader.js"), "utf8"))
  .replace("__KERNELSCOPE_VIEW__", packed)
  .replace("__KERNELSCOPE_KEY__", key);
const small = await esbuild.transform(loader, { minify: true, format: "esm", target: "es2020", legalComments: "none" });
await writeFile(new URL("widget.js", out), small.code);
// widget.css from earlier builds: the view now brings its stylesheet itself.
await rm(new URL("widget.css", out), { force: true });
console.log(
  `widget.js ${small.code.length} bytes (the view: ${code.length} bytes, gzipped ${Buffer.byteLength(packed, "base64")})`
);
