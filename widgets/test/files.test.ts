import { describe, expect, it, vi } from "vitest";
import type { ToolResult } from "../src/bridge/types";
import {
  DownloadError,
  type Screen,
  analyzeFileArg,
  delimiterKey,
  excerpt,
  formatBytes,
  formatDate,
  formatNumber,
  hexPairs,
  kindLabel,
  modelContentOf,
  outcomeOf,
  pdfDate,
  reduce,
  resolveDownload,
} from "../src/files/logic";
import { TEXT } from "../src/files/text";

const info = (id: string, name = `${id}.csv`) => ({
  id,
  name,
  kind: "csv",
  mime_type: "text/csv",
  claimed_mime_type: null,
  size: 1234,
  sha256: "ab".repeat(32),
  saved: true,
  created_at: "2026-03-01T10:00:00Z",
  expires_at: null,
});
const ref = (id: string, url = `https://files.example/${id}`) => ({
  download_url: url,
  file_id: id,
  mime_type: "application/json",
  file_name: `${id}-analysis.json`,
});
const analysisResult: ToolResult = {
  content: [{ type: "text", text: "a.csv (text/csv, 1,234 bytes): CSV…" }],
  structuredContent: { file: info("file_a"), summary: "CSV, 3 rows", warnings: ["w1"], report: ref("file_r") },
  _meta: {
    analysis: { file_id: "file_a", kind: "csv", mime_type: "text/csv", details: { bytes: 1234, rows: 3, columns: [] }, warnings: ["w1"] },
    "openai/widgetSessionId": "s1",
  },
};
const libraryResult = (...ids: string[]): ToolResult => ({
  structuredContent: {
    files: ids.map((id) => ({ file: info(id), summary: "s", download: ref(id, `https://fresh.example/${id}`) })),
    total: ids.length,
  },
});
const challenge: ToolResult = {
  isError: true,
  content: [{ type: "text", text: "The file library needs the user's account" }],
  _meta: { "mcp/www_authenticate": ["Bearer error=\"insufficient_scope\""] },
};

describe("outcomeOf picks the view", () => {
  it("open_file: a file to read through the host, then analyse", () => {
    const o = outcomeOf({ structuredContent: { opening: { name: "t.csv", resourceUri: "file://host/1" } } });
    expect(o).toEqual({ kind: "opening", file: { name: "t.csv", resourceUri: "file://host/1" } });
    expect(reduce({ kind: "loading" }, o, "first")).toEqual({ screen: { kind: "loading" }, open: o.kind === "opening" ? o.file : null });
  });

  it("analyze_file: the facts and the hidden analysis", () => {
    const o = outcomeOf(analysisResult);
    expect(o.kind).toBe("analysis");
    if (o.kind !== "analysis") return;
    expect(o.data.file.id).toBe("file_a");
    expect(o.data.report.file_id).toBe("file_r");
    expect(o.data.analysis?.details.rows).toBe(3);
  });

  it("analyze_file without _meta: facts only", () => {
    const o = outcomeOf({ structuredContent: analysisResult.structuredContent });
    expect(o.kind === "analysis" && o.data.analysis).toBeNull();
  });

  it("compare_files: each file with its own analysis, matched by id", () => {
    const o = outcomeOf({
      structuredContent: {
        files: [
          { file: info("file_1"), summary: "", warnings: [], report: ref("r1") },
          { file: info("file_2"), summary: "", warnings: [], report: ref("r2") },
        ],
        comparison: {
          summary: "Compared 2 files",
          shared_columns: ["id"],
          only_in: { "file_1.csv": ["x"], "file_2.csv": [] },
          type_conflicts: [{ column: "id", types: { "file_1.csv": "integer", "file_2.csv": "string" } }],
          rows: { "file_1.csv": 2, "file_2.csv": 5 },
        },
      },
      _meta: {
        analyses: [
          { file_id: "file_2", kind: "csv", mime_type: "text/csv", details: { rows: 5 }, warnings: [] },
          { file_id: "file_1", kind: "csv", mime_type: "text/csv", details: { rows: 2 }, warnings: [] },
        ],
      },
    });
    expect(o.kind).toBe("comparison");
    if (o.kind !== "comparison") return;
    expect(o.files.map((f) => f.analysis?.details.rows)).toEqual([2, 5]);
    expect(o.comparison.type_conflicts[0].types["file_2.csv"]).toBe("string");
    expect(o.comparison.rows["file_2.csv"]).toBe(5);
  });

  it("list_files, delete_file, errors and challenges", () => {
    const lib = outcomeOf(libraryResult("file_1", "file_2"));
    expect(lib.kind === "library" && lib.files.length).toBe(2);
    expect(outcomeOf({ structuredContent: { files: [], total: 0 } })).toEqual({ kind: "library", files: [], total: 0 });
    expect(outcomeOf({ structuredContent: { deleted: false, file_id: "file_9" } })).toEqual({ kind: "deleted", fileId: "file_9", deleted: false });
    expect(outcomeOf(challenge).kind).toBe("signed-out");
    expect(outcomeOf({ _meta: { "mcp/www_authenticate": "Bearer y" } }).kind).toBe("signed-out");
    expect(outcomeOf({ isError: true, content: [{ type: "text", text: "too large" }] })).toEqual({ kind: "error", message: "too large" });
    expect(outcomeOf({ structuredContent: { nope: 1 } }).kind).toBe("unknown");
  });
});

describe("reduce", () => {
  const analysis = reduce({ kind: "loading" }, outcomeOf(analysisResult), "first").screen;
  const library = reduce({ kind: "loading" }, outcomeOf(libraryResult("file_1", "file_2")), "first").screen;

  it("a failed action keeps the screen and reports above it", () => {
    const step = reduce(analysis, { kind: "error", message: "boom" }, "analyze");
    expect(step.screen).toBe(analysis);
    expect(step.actionError).toBe("boom");
  });

  it("a failed first result is the error screen", () => {
    expect(reduce({ kind: "loading" }, { kind: "error", message: "boom" }, "first").screen).toEqual({ kind: "error", message: "boom" });
  });

  it("the library refused means signed out, whatever was shown", () => {
    expect(reduce(analysis, outcomeOf(challenge), "list").screen.kind).toBe("signed-out");
  });

  it("a delete drops the row and asks for a fresh list", () => {
    const step = reduce(library, { kind: "deleted", fileId: "file_1", deleted: true }, "delete");
    expect(step.refresh).toBe(true);
    expect(step.deleted).toEqual({ fileId: "file_1", deleted: true });
    const next = step.screen as Extract<Screen, { kind: "library" }>;
    expect(next.files.map((e) => e.file.id)).toEqual(["file_2"]);
    expect(next.total).toBe(1);
  });

  it("a delete as the first result loads the library", () => {
    const step = reduce({ kind: "loading" }, { kind: "deleted", fileId: "f", deleted: true }, "first");
    expect(step.screen.kind).toBe("loading");
    expect(step.refresh).toBe(true);
  });

  it("model content stays small", () => {
    expect(modelContentOf(analysis)).toEqual({
      view: "analysis",
      file: { id: "file_a", name: "file_a.csv", kind: "csv", size: 1234 },
      summary: "CSV, 3 rows",
    });
    expect(modelContentOf(library)).toEqual({
      view: "library",
      fileCount: 2,
      shown: [
        { id: "file_1", name: "file_1.csv" },
        { id: "file_2", name: "file_2.csv" },
      ],
    });
  });
});

describe("resolveDownload", () => {
  it("never hands out a URL that is not http(s), whoever offered it", async () => {
    const list = vi.fn(async () => libraryResult("file_9"));
    const got = resolveDownload("file_1", { host: async () => "javascript:alert(1)", list }, "data:text/html,<b>x</b>");
    await expect(got).rejects.toThrow();
  });

  it("takes the host's URL when it has one", async () => {
    const list = vi.fn();
    await expect(resolveDownload("file_1", { host: async () => "https://host/1", list })).resolves.toEqual({
      url: "https://host/1",
      source: "host",
    });
    expect(list).not.toHaveBeenCalled();
  });

  it("asks list_files when the host has nothing or does not know the id", async () => {
    const list = vi.fn(async () => libraryResult("file_1", "file_2"));
    await expect(resolveDownload("file_2", { host: async () => null, list })).resolves.toEqual({
      url: "https://fresh.example/file_2",
      source: "list",
    });
    const throwing = async () => {
      throw new Error("unknown file id");
    };
    await expect(resolveDownload("file_1", { host: throwing, list })).resolves.toMatchObject({ source: "list" });
  });

  it("falls back on the link the result carried (a report is not in the library)", async () => {
    const list = async () => libraryResult("file_1");
    await expect(resolveDownload("file_r", { host: async () => null, list }, "https://old/r")).resolves.toEqual({
      url: "https://old/r",
      source: "result",
    });
  });

  it("says why when nothing works", async () => {
    const signedOut = resolveDownload("file_1", { host: async () => null, list: async () => challenge });
    await expect(signedOut).rejects.toBeInstanceOf(DownloadError);
    await expect(signedOut).rejects.toMatchObject({ reason: "signIn" });
    await expect(resolveDownload("file_9", { host: async () => null, list: async () => libraryResult("file_1") })).rejects.toMatchObject({
      reason: "notFound",
    });
    await expect(
      resolveDownload("file_9", {
        host: async () => null,
        list: async () => {
          throw new Error("offline");
        },
      }),
    ).rejects.toMatchObject({ reason: "failed", message: "offline" });
  });
});

describe("analyzeFileArg", () => {
  it("sends the two required properties and the optional ones only when known", () => {
    expect(analyzeFileArg({ fileId: "file-abc" }, "https://host/dl")).toEqual({ download_url: "https://host/dl", file_id: "file-abc" });
    expect(analyzeFileArg({ fileId: "f", fileName: "a.csv", mimeType: "text/csv" }, "u")).toEqual({
      download_url: "u",
      file_id: "f",
      file_name: "a.csv",
      mime_type: "text/csv",
    });
  });
});

// ICU puts (narrow) no-break spaces in some locales' output; the tests compare plain spaces.
const plain = (s: string) => s.replace(/[\u00a0\u202f]/g, " ");

describe("formatting", () => {
  it("sizes in the locale's units", () => {
    expect(formatBytes(512, "en")).toBe("512 bytes");
    expect(formatBytes(1, "en")).toBe("1 byte");
    expect(plain(formatBytes(512, "fr"))).toBe("512 octets");
    expect(formatBytes(1536, "en")).toBe("1.5 kB");
    expect(formatBytes(12_345_678, "en")).toBe("12.3 MB");
    expect(formatBytes(999_960, "en")).toBe("1 MB");
    expect(plain(formatBytes(1536, "fr"))).toBe("1,5 ko");
    expect(formatBytes(2_000_000_000, "pt-BR")).toBe("2 GB");
    expect(formatBytes(-1, "en")).toBe("—");
    expect(formatBytes(1536, "not a locale!")).toBe("1.5 kB");
  });

  it("dates and numbers", () => {
    expect(plain(formatDate("2026-03-01T10:00:00Z", "en", "UTC"))).toBe("Mar 1, 2026, 10:00 AM");
    expect(plain(formatDate("2026-03-01T10:00:00Z", "fr", "UTC"))).toBe("1 mars 2026, 10:00");
    expect(formatDate("yesterday", "en")).toBe("yesterday");
    expect(formatDate(null, "en")).toBe("");
    expect(formatNumber(1234567.5, "en")).toBe("1,234,567.5");
    expect(formatNumber(null, "en")).toBe("—");
  });

  it("PDF dates", () => {
    expect(pdfDate("D:20240131120000+01'00'")?.toISOString()).toBe("2024-01-31T11:00:00.000Z");
    expect(pdfDate("D:20240131120000Z")?.toISOString()).toBe("2024-01-31T12:00:00.000Z");
    expect(pdfDate("D:2024")?.toISOString()).toBe("2024-01-01T00:00:00.000Z");
    expect(pdfDate("Tuesday")).toBeNull();
  });

  it("excerpts cut at a word", () => {
    expect(excerpt("short text")).toBe("short text");
    const long = "word ".repeat(200);
    const cut = excerpt(long, 100);
    expect(cut.endsWith("…")).toBe(true);
    expect(cut.length).toBeLessThanOrEqual(101);
    expect(cut).not.toMatch(/wor…$/);
  });

  it("labels", () => {
    expect(delimiterKey("\t")).toBe("tab");
    expect(delimiterKey(":")).toBeNull();
    expect(kindLabel("csv", "text/tab-separated-values")).toBe("TSV");
    expect(kindLabel("csv", "text/csv")).toBe("CSV");
    expect(kindLabel("jsonl")).toBe("JSON Lines");
    expect(hexPairs("89504e47")).toBe("89 50 4e 47");
  });
});

describe("strings", () => {
  it("every language has every key", () => {
    const keys = Object.keys(TEXT.en).sort();
    for (const lang of ["fr", "es", "pt", "zh"]) expect(Object.keys(TEXT[lang] ?? {}).sort()).toEqual(keys);
  });
});

describe("the comparison's shared axis", () => {
  const hist = (edges: number[], counts: number[]) => ({ histogram: { edges, counts } });

  it("spans every file's range and the tallest share of any file", async () => {
    const { sharedScale } = await import("../src/files/Report");
    const columns = [hist([0, 5, 10], [3, 1]), hist([40, 45, 50], [1, 1]), { name: "text" }];
    const scale = sharedScale(columns);
    expect(scale).toEqual({ min: 0, max: 50, peak: 0.75 });
  });

  it("is none when no column has a histogram that holds together", async () => {
    const { sharedScale } = await import("../src/files/Report");
    expect(sharedScale([{ top_values: [] }, hist([0, 1], [1, 2])])).toBeNull();
    expect(sharedScale([hist([3, 3], [2])])).toBeNull(); // one value: no range to draw
  });
});
