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
// A widget that draws a map carries its map library (Leaflet, about 50 KB gzip with its CSS):
// 80 KB, well under the 110 KB a map widget may weigh, so that a second library that size fails.
const BUDGETS = { cafes: 80 * 1024 };
const budgetOf = (name) => BUDGETS[name] ?? BUDGET_GZIP;
const NOT_WIDGETS = new Set(["bridge", "ui", "host"]);

async function bundle(entryDir, dest) {
  const tmp = join(root, "node_modules", ".widget-build", entryDir.split("/").pop());
  rmSync(tmp, { recursive: true, force: true });
  // The npm packages the bundle took code from (their licence notices ship beside it), read
  // before the single-file plugin folds the chunks into the page.
  const packages = new Set();
  const licences = {
    name: "packages-used",
    renderChunk(_code, chunk) {
      for (const id of chunk.moduleIds) {
        // The last node_modules/ of the path: a package nested in another is its own.
        const match = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(id.replaceAll("\\", "/"));
        if (match) packages.add(match[1]);
      }
      return null;
    },
  };
  await build({
    configFile: false,
    logLevel: "warn",
    root: entryDir,
    base: "./",
    plugins: [licences, viteSingleFile({ removeViteModuleLoader: true })],
    build: { outDir: tmp, emptyOutDir: true, target: "es2022", reportCompressedSize: false, modulePreload: false },
  });
  // Every copy carries the libraries' copyright lines (the minifier drops their banners; the
  // licences' full text is THIRD-PARTY-NOTICES.txt beside the bundles).
  const built = readFileSync(join(tmp, "index.html"), "utf8");
  const credits = [...packages].sort().map(credit).join("; ");
  const html = Buffer.from(credits ? built.replace("<head>", `<head>\n<!-- ${credits} -->`) : built);
  mkdirSync(dirname(dest), { recursive: true });
  writeFileSync(dest, html);
  return { html, packages };
}

/** A package's licence file (LICENSE, LICENCE, COPYING, with or without .md/.txt). */
function licenceOf(dep) {
  const dir = join(root, "node_modules", dep);
  const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(f));
  if (!file) {
    console.error(`${dep} ships no licence file: its notice cannot go with the bundles`);
    process.exit(1);
  }
  return readFileSync(join(dir, file), "utf8").trim();
}

/** "leaflet 1.9.4 (BSD-2-Clause), Copyright (c) ...": one line of credit for a bundle's head. */
function credit(dep) {
  const pkg = JSON.parse(readFileSync(join(root, "node_modules", dep, "package.json"), "utf8"));
  const owners = licenceOf(dep).split("\n").filter((l) => /^\s*copyright\b/i.test(l)).map((l) => l.trim());
  return `${dep} ${pkg.version} (${pkg.license})${owners.length ? ", " + owners.join(", ") : ""}`
    .replaceAll("--", "-");
}

const args = process.argv.slice(2);
const names = readdirSync(src, { withFileTypes: true })
  .filter((d) => d.isDirectory() && !NOT_WIDGETS.has(d.name) && existsSync(join(src, d.name, "index.html")))
  .map((d) => d.name)
  .sort();

rmSync(staging, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const manifest = { widgets: {} };
const rows = [];
const included = new Set();
for (const name of names) {
  const { html, packages } = await bundle(join(src, name), join(outDir, `${name}.html`));
  for (const dep of packages) included.add(dep);
  const gzip = gzipSync(html, { level: 9 }).length;
  manifest.widgets[name] = {
    file: `${name}.html`,
    sha256: createHash("sha256").update(html).digest("hex"),
    bytes: html.length,
    gzip_bytes: gzip,
    budget_gzip_bytes: budgetOf(name),
  };
  rows.push([name, html.length, gzip]);
}
writeFileSync(join(outDir, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
// The minifier drops the libraries' licence banners: their notices ship beside the bundles
// instead (Leaflet's BSD-2-Clause and Preact's MIT licence ask for them in every copy).
function writeNotices(dir, packages, what) {
  const notices = [...packages].sort().map((dep) => {
    const pkg = JSON.parse(readFileSync(join(root, "node_modules", dep, "package.json"), "utf8"));
    return `${dep} ${pkg.version} (${pkg.license})\n${"-".repeat(40)}\n${licenceOf(dep)}\n`;
  });
  const preface = `${what} in this folder include these libraries, under these licences.`;
  writeFileSync(join(dir, "THIRD-PARTY-NOTICES.txt"), `${preface}\n\n${notices.join("\n")}`);
}
writeNotices(outDir, included, "The widget bundles");

const withHost = !args.includes("--no-host") && existsSync(join(src, "host", "index.html"));
if (withHost) {
  const { packages } = await bundle(join(src, "host"), join(hostOut, "index.html"));
  writeNotices(hostOut, packages, "The host emulator's page");
}

const kb = (n) => (n / 1024).toFixed(1).padStart(7) + " KB";
console.log(`widget       ${"html".padStart(10)} ${"gzip".padStart(10)} ${"budget".padStart(10)}`);
for (const [name, bytes, gzip] of rows) {
  const ok = gzip <= budgetOf(name) ? "ok" : "OVER BUDGET";
  console.log(`${name.padEnd(12)} ${kb(bytes)} ${kb(gzip)} ${kb(budgetOf(name))}   ${ok}`);
}
const over = rows.filter(([name, , gzip]) => gzip > budgetOf(name));
if (over.length) {
  const named = over.map(([name]) => `${name} (${budgetOf(name) / 1024} KB)`).join(", ");
  console.error(`over the gzip budget: ${named}; app/static left unchanged`);
  process.exit(1);
}
for (const [built, shipped] of [[outDir, join(staticDir, "widgets")], ...(withHost ? [[hostOut, join(staticDir, "devhost")]] : [])]) {
  rmSync(shipped, { recursive: true, force: true });
  mkdirSync(dirname(shipped), { recursive: true });
  renameSync(built, shipped);
}
