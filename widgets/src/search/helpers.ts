// Pure helpers of the search widget (no DOM, no bridge): tested in test/search.test.ts.

export interface Hit {
  id: string;
  title: string;
  url: string;
  snippet?: string;
}

/** The hits of a `search` structuredContent, dropping malformed rows (no id, no title). */
export function readHits(structured: Record<string, unknown> | null | undefined): Hit[] {
  const rows = structured?.results;
  if (!Array.isArray(rows)) return [];
  const hits: Hit[] = [];
  for (const row of rows) {
    if (!row || typeof row !== "object") continue;
    const { id, title, url, snippet } = row as Record<string, unknown>;
    if (typeof id !== "string" || !id || typeof title !== "string") continue;
    hits.push({
      id,
      title: title || id,
      url: typeof url === "string" ? url : "",
      snippet: typeof snippet === "string" && snippet.trim() ? snippet.trim() : undefined,
    });
  }
  return hits;
}

/** `url` when it is an absolute http(s) URL (safe to put in an href and to open), else null. */
export function safeHttpUrl(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

/** The host shown under a result title: `docs.python.org` (no `www.`); "" for an unusable URL. */
export function urlHost(url: string | null | undefined): string {
  const safe = safeHttpUrl(url);
  if (!safe) return "";
  return new URL(safe).hostname.replace(/^www\./, "");
}

/** The query from the tool input (`{q}`); "" until it arrives (or when it never does). */
export function readQuery(input: Record<string, unknown> | null | undefined): string {
  const q = input?.q;
  return typeof q === "string" ? q.trim() : "";
}
