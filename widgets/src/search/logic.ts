// Pure logic of the search widget (no DOM, no bridge): tested in test/search.test.ts.
import { httpUrl } from "../ui/urls";

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

/** An absolute http(s) URL, else null (the shared rule of what a widget may open). */
export const safeHttpUrl = httpUrl;

/**
 * The URL a result may link to: http(s), and when the server listed the origins the host lets the
 * widget open (`_meta.linkOrigins`, the widget's redirect_domains), one of those. null: no link.
 */
export function openableUrl(url: string | null | undefined, origins: readonly string[] | null): string | null {
  const safe = safeHttpUrl(url);
  if (!safe || origins === null) return safe;
  return origins.includes(new URL(safe).origin) ? safe : null;
}

/** The origins from a result's `_meta.linkOrigins`; null when the server did not say. */
export function linkOrigins(meta: Record<string, unknown> | null | undefined): string[] | null {
  const origins = meta?.linkOrigins;
  return Array.isArray(origins) ? origins.filter((o): o is string => typeof o === "string") : null;
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
