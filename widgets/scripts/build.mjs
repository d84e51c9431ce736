// Builds every widget (a folder of src/ with an index.html, except the host emulator) into ONE
// self-contained HTML file under app/static/widgets/, writes manifest.json with content hashes,
// prints the size table and fails when a widget is over budget. Then builds the dev-only host
// emulator into app/static/devhost/. Output is deterministic: CI rebuilds and diffs it.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "vite";
import { viteSingleFile } from "vite-plugin-singlefile";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const src = join(root, "src");
const staticDir = resolve(root, "..", "app", "static");
// Built into a staging folder and swapped in at the end: a failed or over-budget build leaves
// the shipped bundles as they were. (`--no-host` skips the host emulator.)
const staging = join(root, "node_modules", ".widget-staging");
const outDir = join(staging, "widgets");
const hostOut = join(staging, "devhost");
const BUDGET_GZIP = 60 * 1024;
const NOT_WIDGETS = new Set(["bridge", "ui", "host"]);

async function bundle(entryDir, dest) {
  const tmp = join(root, "node_modules", ".widget-build", entryDir.split("/").pop());
  rmSync(tmp, { recursive: true, force: true });
  await build({
    configFile: false,
    logLevel: "warn",
    root: entryDir,
    base: "./",
    plugins: [viteSingleFile({ removeViteModuleLoader: true })],
    build: { outDir: tmp, emptyOutDir: true, target: "es2022", reportCompressedSize: false, modulePreload: false },
  });
  const html = readFileSync(join(tmp, "index.html"));
  mkdirSync(dirname(dest), { recursive: true });
  writeFileSync(dest, html);
  return html;
}

const args = process.argv.slice(2);
const names = readdirSync(src, { withFileTypes: true })
  .filter((d) => d.isDirectory() && !NOT_WIDGETS.has(d.name) && existsSync(join(src, d.name, "index.html")))
  .map((d) => d.name)
  .sort();

rmSync(staging, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const manifest = { budget_gzip_bytes: BUDGET_GZIP, widgets: {} };
const rows = [];
for (const name of names) {
  const html = await bundle(join(src, name), join(outDir, `${name}.html`));
  const gzip = gzipSync(html, { level: 9 }).length;
  manifest.widgets[name] = {
    file: `${name}.html`,
    sha256: createHash("sha256").update(html).digest("hex"),
    bytes: html.length,
    gzip_bytes: gzip,
  };
  rows.push([name, html.length, gzip]);
}
writeFileSync(join(outDir, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");

const withHost = !args.includes("--no-host") && existsSync(join(src, "host", "index.html"));
if (withHost) await bundle(join(src, "host"), join(hostOut, "index.html"));

const kb = (n) => (n / 1024).toFixed(1).padStart(7) + " KB";
console.log(`widget       ${"html".padStart(10)} ${"gzip".padStart(10)}   budget ${BUDGET_GZIP / 1024} KB gzip`);
for (const [name, bytes, gzip] of rows) {
  console.log(`${name.padEnd(12)} ${kb(bytes)} ${kb(gzip)}   ${gzip <= BUDGET_GZIP ? "ok" : "OVER BUDGET"}`);
}
const over = rows.filter(([, , gzip]) => gzip > BUDGET_GZIP).map(([name]) => name);
if (over.length) {
  console.error(`over the ${BUDGET_GZIP / 1024} KB gzip budget: ${over.join(", ")}; app/static left unchanged`);
  process.exit(1);
}
for (const [built, shipped] of [[outDir, join(staticDir, "widgets")], ...(withHost ? [[hostOut, join(staticDir, "devhost")]] : [])]) {
  rmSync(shipped, { recursive: true, force: true });
  mkdirSync(dirname(shipped), { recursive: true });
  renameSync(built, shipped);
}
