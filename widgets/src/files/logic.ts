// Files: reading the four tools' results, formatting, and fetching a download link, as pure functions
// (tested in test/files.test.ts). Shapes: app/features/files/schemas.py (structuredContent) and
// app/features/files/tool.py `widget_analysis` (the hidden `_meta.analysis` / `_meta.analyses`).
import { needsSignIn, resultText } from "../bridge/bridge";
import { httpUrl } from "../ui/urls";
import type { Json, LibraryFile, ToolResult } from "../bridge/types";

export interface FileReference {
  download_url: string;
  file_id: string;
  mime_type: string;
  file_name: string;
}

export interface FileInfo {
  id: string;
  name: string;
  kind: string;
  mime_type: string;
  claimed_mime_type?: string | null;
  size: number;
  sha256: string;
  saved: boolean;
  created_at: string;
  expires_at?: string | null;
}

/** `_meta.analysis`: the whole analysis, for the widget only. */
export interface WidgetAnalysis {
  file_id: string;
  kind: string;
  mime_type: string;
  details: Json;
  warnings: string[];
}

export interface AnalysisData {
  file: FileInfo;
  summary: string;
  warnings: string[];
  report: FileReference;
  /** null when the host did not pass the result's `_meta` on: the view then shows the summary only. */
  analysis: WidgetAnalysis | null;
}

export interface TypeConflict {
  column: string;
  types: Record<string, string>;
}

export interface Comparison {
  summary: string;
  shared_columns: string[];
  only_in: Record<string, string[]>;
  type_conflicts: TypeConflict[];
  rows: Record<string, number>;
}

export interface LibraryEntry {
  file: FileInfo;
  summary: string;
  download: FileReference;
}

export type Outcome =
  | { kind: "signed-out"; message: string }
  | { kind: "error"; message: string }
  | { kind: "analysis"; data: AnalysisData }
  | { kind: "comparison"; files: AnalysisData[]; comparison: Comparison }
  | { kind: "library"; files: LibraryEntry[]; total: number }
  | { kind: "deleted"; fileId: string; deleted: boolean }
  | { kind: "opening"; file: ChosenFile }
  | { kind: "unknown" };

/** A file the person chose on their computer (open_file, from a file entrypoint). */
export interface ChosenFile {
  name: string;
  resourceUri: string;
}

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : []);

function isFileInfo(v: unknown): v is FileInfo {
  return isObject(v) && typeof v.id === "string" && typeof v.name === "string" && typeof v.size === "number";
}

function isReference(v: unknown): v is FileReference {
  return isObject(v) && typeof v.file_id === "string" && typeof v.download_url === "string";
}

function widgetAnalysis(v: unknown): WidgetAnalysis | null {
  if (!isObject(v) || typeof v.file_id !== "string") return null;
  return {
    file_id: v.file_id,
    kind: typeof v.kind === "string" ? v.kind : "binary",
    mime_type: typeof v.mime_type === "string" ? v.mime_type : "",
    details: isObject(v.details) ? v.details : {},
    warnings: strings(v.warnings),
  };
}

function analysisData(v: unknown, analyses: WidgetAnalysis[], index: number): AnalysisData | null {
  if (!isObject(v) || !isFileInfo(v.file) || !isReference(v.report)) return null;
  const file = v.file;
  return {
    file,
    summary: typeof v.summary === "string" ? v.summary : "",
    warnings: strings(v.warnings),
    report: v.report,
    // Matched by our file id; by position when the ids do not line up (they always should).
    analysis: analyses.find((a) => a.file_id === file.id) ?? analyses[index] ?? null,
  };
}

/** What a result of analyze_file, compare_files, list_files or delete_file says. */
export function outcomeOf(result: ToolResult | null | undefined): Outcome {
  if (!result) return { kind: "unknown" };
  if (needsSignIn(result)) return { kind: "signed-out", message: resultText(result) };
  if (result.isError) return { kind: "error", message: resultText(result) };
  const sc = result.structuredContent ?? {};
  const meta = result._meta ?? {};
  if (isFileInfo(sc.file) && isReference(sc.report)) {
    const single = widgetAnalysis(meta.analysis);
    const data = analysisData(sc, single ? [single] : [], 0);
    if (data) return { kind: "analysis", data };
  }
  if (Array.isArray(sc.files) && isObject(sc.comparison)) {
    const analyses = (Array.isArray(meta.analyses) ? meta.analyses : []).map(widgetAnalysis).filter((a) => a !== null);
    const files = sc.files.map((f, i) => analysisData(f, analyses, i)).filter((f) => f !== null);
    return { kind: "comparison", files, comparison: comparisonOf(sc.comparison) };
  }
  if (Array.isArray(sc.files) && typeof sc.total === "number") {
    const files = sc.files.filter(
      (e): e is LibraryEntry => isObject(e) && isFileInfo(e.file) && isReference(e.download),
    );
    return { kind: "library", files, total: sc.total };
  }
  const opening = isObject(sc.opening) ? sc.opening : null;
  if (opening && typeof opening.name === "string" && typeof opening.resourceUri === "string") {
    return { kind: "opening", file: { name: opening.name, resourceUri: opening.resourceUri } };
  }
  if (typeof sc.deleted === "boolean" && typeof sc.file_id === "string") {
    return { kind: "deleted", fileId: sc.file_id, deleted: sc.deleted };
  }
  return { kind: "unknown" };
}

function comparisonOf(c: Json): Comparison {
  const onlyIn: Record<string, string[]> = {};
  if (isObject(c.only_in)) for (const [k, v] of Object.entries(c.only_in)) onlyIn[k] = strings(v);
  const rows: Record<string, number> = {};
  if (isObject(c.rows)) for (const [k, v] of Object.entries(c.rows)) if (typeof v === "number") rows[k] = v;
  const conflicts = (Array.isArray(c.type_conflicts) ? c.type_conflicts : [])
    .filter((x): x is Json => isObject(x) && typeof x.column === "string" && isObject(x.types))
    .map((x) => ({ column: x.column as string, types: x.types as Record<string, string> }));
  return {
    summary: typeof c.summary === "string" ? c.summary : "",
    shared_columns: strings(c.shared_columns),
    only_in: onlyIn,
    type_conflicts: conflicts,
    rows,
  };
}

// ---- the widget's screens ---------------------------------------------------------------------

export type Screen =
  | { kind: "loading" }
  | { kind: "error"; message: string }
  | { kind: "signed-out" }
  | { kind: "analysis"; data: AnalysisData }
  | { kind: "comparison"; files: AnalysisData[]; comparison: Comparison }
  | { kind: "library"; files: LibraryEntry[]; total: number };

/** Where a result came from: the host, or the widget's own call of a tool. */
export type Origin = "first" | "analyze" | "list" | "delete";

export interface Step {
  screen: Screen;
  /** Set when the screen stays and the error goes above it ("" = no text: say so generically). */
  actionError?: string;
  /** The library must be fetched again (after a delete). */
  refresh?: boolean;
  deleted?: { fileId: string; deleted: boolean };
  /** A file to read through the host and analyse (a file entrypoint opened the widget). */
  open?: ChosenFile;
}

/** The next screen after an outcome. A failed action keeps what is shown and reports the error above it. */
export function reduce(screen: Screen, outcome: Outcome, origin: Origin): Step {
  const showing = screen.kind === "analysis" || screen.kind === "comparison" || screen.kind === "library";
  switch (outcome.kind) {
    case "signed-out":
      // Analysing works anonymously: only the library (list, delete) asks for an account.
      return { screen: { kind: "signed-out" } };
    case "error":
      if (origin !== "first" && showing) return { screen, actionError: outcome.message };
      return { screen: { kind: "error", message: outcome.message } };
    case "analysis":
      return { screen: { kind: "analysis", data: outcome.data } };
    case "comparison":
      return { screen: { kind: "comparison", files: outcome.files, comparison: outcome.comparison } };
    case "library":
      return { screen: { kind: "library", files: outcome.files, total: outcome.total } };
    case "deleted": {
      const next: Screen =
        screen.kind === "library"
          ? {
              kind: "library",
              files: screen.files.filter((e) => e.file.id !== outcome.fileId),
              total: Math.max(0, screen.total - (outcome.deleted ? 1 : 0)),
            }
          : { kind: "loading" };
      return { screen: next, refresh: true, deleted: { fileId: outcome.fileId, deleted: outcome.deleted } };
    }
    case "opening":
      // Read through the host, then analysed: the widget's own steps (FilesWidget.openChosen).
      return { screen: { kind: "loading" }, open: outcome.file };
    case "unknown":
      if (origin !== "first" && showing) return { screen, actionError: "" };
      return { screen: { kind: "error", message: "" } };
  }
}

/** What the model sees of the widget after a change in it (kept small; file contents never go there). */
export function modelContentOf(screen: Screen): Json {
  switch (screen.kind) {
    case "analysis": {
      const f = screen.data.file;
      return { view: "analysis", file: { id: f.id, name: f.name, kind: f.kind, size: f.size }, summary: screen.data.summary };
    }
    case "comparison":
      return { view: "comparison", files: screen.files.map((d) => d.file.name), summary: screen.comparison.summary };
    case "library":
      return { view: "library", fileCount: screen.total, shown: screen.files.map((e) => ({ id: e.file.id, name: e.file.name })) };
    default:
      return { view: screen.kind };
  }
}

// ---- downloads and uploads ------------------------------------------------------------------

export const LIST_LIMIT_MAX = 100;

export type DownloadSource = "host" | "list" | "result";

export class DownloadError extends Error {
  constructor(
    readonly reason: "signIn" | "notFound" | "failed",
    message = "",
  ) {
    super(message || reason);
    this.name = "DownloadError";
  }
}

/**
 * A URL to download one of OUR files (`file_…`). The host is asked first (ChatGPT's getFileDownloadUrl: null
 * when it has none, an error when it does not know the id, which is the usual answer for our ids); then
 * list_files, for a fresh link of that id; last, the link the result carried (short-lived: it may have expired).
 */
export async function resolveDownload(
  fileId: string,
  deps: { host: (id: string) => Promise<string | null>; list: () => Promise<ToolResult> },
  carried?: string,
): Promise<{ url: string; source: DownloadSource }> {
  try {
    const url = httpUrl(await deps.host(fileId));
    if (url) return { url, source: "host" };
  } catch {
    // the host does not know our id: go on
  }
  let failure: DownloadError = new DownloadError("notFound");
  try {
    const outcome = outcomeOf(await deps.list());
    if (outcome.kind === "library") {
      const entry = outcome.files.find((e) => e.download.file_id === fileId || e.file.id === fileId);
      const listed = httpUrl(entry?.download.download_url);
      if (listed) return { url: listed, source: "list" };
    } else if (outcome.kind === "signed-out") {
      failure = new DownloadError("signIn", outcome.message);
    } else if (outcome.kind === "error") {
      failure = new DownloadError("failed", outcome.message);
    }
  } catch (err) {
    failure = new DownloadError("failed", (err as Error).message);
  }
  const fallback = httpUrl(carried);
  if (fallback) return { url: fallback, source: "result" };
  throw failure;
}

/** analyze_file's `file` argument for a file the host holds: exactly the four declared properties. */
export function analyzeFileArg(file: LibraryFile, downloadUrl: string): Json {
  const arg: Json = { download_url: downloadUrl, file_id: file.fileId };
  if (file.mimeType) arg.mime_type = file.mimeType;
  if (file.fileName) arg.file_name = file.fileName;
  return arg;
}

// ---- formatting (host locale, Intl) ---------------------------------------------------------

function safeLocale(locale: string): string {
  try {
    return Intl.getCanonicalLocales(locale)[0] ?? "en";
  } catch {
    return "en";
  }
}

const UNITS = ["byte", "kilobyte", "megabyte", "gigabyte", "terabyte"] as const;

/** 512 -> "512 bytes", 1536 -> "1.5 kB", in the locale's words (decimal units, as Intl names them). */
export function formatBytes(bytes: number, locale: string): string {
  if (!Number.isFinite(bytes) || bytes < 0) return "—";
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  // 999.96 kB would print as "1,000 kB": move up a unit instead.
  if (unit < UNITS.length - 1 && unit > 0 && Math.round(value * 10) / 10 >= 1000) {
    value /= 1000;
    unit++;
  }
  return new Intl.NumberFormat(safeLocale(locale), {
    style: "unit",
    unit: UNITS[unit],
    // The short form of "byte" is not plural in every locale ("512 byte"); the long one is.
    unitDisplay: unit === 0 ? "long" : "short",
    maximumFractionDigits: unit === 0 ? 0 : 1,
  }).format(value);
}

export function formatNumber(n: unknown, locale: string, maximumFractionDigits = 6): string {
  if (typeof n !== "number" || !Number.isFinite(n)) return n == null ? "—" : String(n);
  return new Intl.NumberFormat(safeLocale(locale), { maximumFractionDigits }).format(n);
}

/** An ISO 8601 instant in the locale's medium date and short time; the text as given when it is no date. */
export function formatDate(value: string | Date | null | undefined, locale: string, timeZone?: string): string {
  if (!value) return "";
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return new Intl.DateTimeFormat(safeLocale(locale), { dateStyle: "medium", timeStyle: "short", timeZone }).format(date);
}

/** A PDF date ("D:20240131120000+01'00'") as a Date; null when it is not one. */
export function pdfDate(value: string): Date | null {
  const m = /^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*(Z|[+-]\d{2}'?\d{2}'?|[+-]\d{2}'?)?/.exec(value.trim());
  if (!m) return null;
  const [, y, mo = "01", d = "01", h = "00", mi = "00", s = "00", tz] = m;
  let offset = "Z";
  if (tz && tz !== "Z") {
    const digits = tz.replace(/'/g, "");
    offset = `${digits.slice(0, 3)}:${digits.slice(3, 5) || "00"}`;
  }
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${offset}`);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** The first `max` characters of a text, cut at a word when one ends near the limit. */
export function excerpt(text: string, max = 600): string {
  const clean = text.replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
  if (clean.length <= max) return clean;
  const cut = clean.slice(0, max);
  const space = cut.search(/\s\S*$/);
  return `${space > max * 0.8 ? cut.slice(0, space) : cut}…`;
}

/** The translation key naming a CSV delimiter, or null for an unusual one (shown as it is). */
export function delimiterKey(delimiter: unknown): "comma" | "semicolon" | "tab" | "pipe" | null {
  switch (delimiter) {
    case ",":
      return "comma";
    case ";":
      return "semicolon";
    case "\t":
      return "tab";
    case "|":
      return "pipe";
    default:
      return null;
  }
}

/** "CSV", "TSV", "JSON Lines"...: the label of a kind (the translatable ones are keys of the catalog). */
export function kindLabel(kind: string, mimeType = ""): string {
  switch (kind) {
    case "csv":
      return mimeType === "text/tab-separated-values" ? "TSV" : "CSV";
    case "json":
      return "JSON";
    case "jsonl":
      return "JSON Lines";
    case "pdf":
      return "PDF";
    default:
      return kind;
  }
}

/** Hex bytes in pairs ("89504e47" -> "89 50 4e 47"). */
export function hexPairs(hex: string): string {
  return (hex.match(/.{1,2}/g) ?? []).join(" ");
}
