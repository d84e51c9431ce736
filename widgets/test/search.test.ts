import { describe, expect, it } from "vitest";
import { readHits, readQuery, safeHttpUrl, urlHost } from "../src/search/logic";

describe("search helpers", () => {
  it("reads hits and drops malformed rows", () => {
    const hits = readHits({
      results: [
        { id: "a", title: "json — JSON encoder", url: "https://docs.python.org/3/library/json.html", snippet: "  Encode  ", score: 1 },
        { id: "b", title: "No url" },
        { title: "no id", url: "https://x.org" },
        null,
        "junk",
        { id: "c", title: "blank snippet", url: "https://x.org", snippet: "   " },
      ],
    });
    expect(hits).toEqual([
      { id: "a", title: "json — JSON encoder", url: "https://docs.python.org/3/library/json.html", snippet: "Encode" },
      { id: "b", title: "No url", url: "", snippet: undefined },
      { id: "c", title: "blank snippet", url: "https://x.org", snippet: undefined },
    ]);
  });

  it("has no hits without a results array", () => {
    expect(readHits(undefined)).toEqual([]);
    expect(readHits({})).toEqual([]);
    expect(readHits({ results: "nope" })).toEqual([]);
  });

  it("accepts only absolute http(s) URLs", () => {
    expect(safeHttpUrl("https://docs.python.org/3/")).toBe("https://docs.python.org/3/");
    expect(safeHttpUrl("http://example.com")).toBe("http://example.com/");
    expect(safeHttpUrl("javascript:alert(1)")).toBeNull();
    expect(safeHttpUrl("data:text/html,hi")).toBeNull();
    expect(safeHttpUrl("/relative/path")).toBeNull();
    expect(safeHttpUrl("")).toBeNull();
    expect(safeHttpUrl(undefined)).toBeNull();
  });

  it("shows the host without www.", () => {
    expect(urlHost("https://docs.python.org/3/library/json.html#x")).toBe("docs.python.org");
    expect(urlHost("https://www.example.com/a")).toBe("example.com");
    expect(urlHost("not a url")).toBe("");
    expect(urlHost("javascript:void(0)")).toBe("");
  });

  it("reads the query from the tool input, which may be missing", () => {
    expect(readQuery({ q: "  json dumps " })).toBe("json dumps");
    expect(readQuery(null)).toBe("");
    expect(readQuery({})).toBe("");
    expect(readQuery({ q: 3 })).toBe("");
  });
});

describe("links the host can open", () => {
  it("links only results on an origin the server listed, and any http(s) URL when it listed none", async () => {
    const { openableUrl, linkOrigins } = await import("../src/search/logic");
    const origins = linkOrigins({ linkOrigins: ["https://docs.python.org"] });
    expect(openableUrl("https://docs.python.org/3/library/asyncio.html", origins)).toBe(
      "https://docs.python.org/3/library/asyncio.html");
    expect(openableUrl("https://notes.example/alice/1", origins)).toBeNull();
    expect(openableUrl("javascript:alert(1)", null)).toBeNull();
    expect(openableUrl("https://notes.example/alice/1", linkOrigins({}))).toBe("https://notes.example/alice/1");
  });
});

describe("highlight marks why a result matched", () => {
  it("marks each query word, case ignored, longest first, and leaves the rest", async () => {
    const { highlight, queryWords } = await import("../src/search/logic");
    const words = queryWords("JSON dumps a");
    expect(words).toEqual(["json", "dumps"]);
    expect(highlight("json.dumps(obj) — Serialize to JSON", words)).toEqual([
      { text: "json", hit: true },
      { text: ".", hit: false },
      { text: "dumps", hit: true },
      { text: "(obj) — Serialize to ", hit: false },
      { text: "JSON", hit: true },
    ]);
    expect(highlight("a+b (c)", queryWords("(c)"))).toEqual([{ text: "a+b (c)", hit: false }]);
    expect(highlight("nothing here", [])).toEqual([{ text: "nothing here", hit: false }]);
  });
});
