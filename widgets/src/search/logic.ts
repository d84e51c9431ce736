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

/** The words of a query, as the server matches them (letters and digits, lower case). */
export function queryWords(q: string): string[] {
  return [...new Set((q.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length > 1))].slice(0, 12);
}

/** `text` cut into runs, each `hit` where it holds one of `words` (case ignored): why it matched. */
export function highlight(text: string, words: readonly string[]): { text: string; hit: boolean }[] {
  if (!words.length || !text) return [{ text, hit: false }];
  const escaped = [...words].sort((a, b) => b.length - a.length).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const runs: { text: string; hit: boolean }[] = [];
  let last = 0;
  for (const match of text.matchAll(new RegExp(escaped.join("|"), "giu"))) {
    const at = match.index ?? 0;
    if (at > last) runs.push({ text: text.slice(last, at), hit: false });
    runs.push({ text: match[0], hit: true });
    last = at + match[0].length;
  }
  if (last < text.length) runs.push({ text: text.slice(last), hit: false });
  return runs;
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
