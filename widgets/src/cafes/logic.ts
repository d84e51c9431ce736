// Pure logic of the cafés widget (no DOM, no bridge): tested in test/cafes.test.ts.
import { language } from "../ui/i18n";

export const LANGUAGES = ["en", "fr", "es", "pt", "zh"] as const;

export interface Cafe {
  name: string;
  address: string;
}

export interface CafeDetails {
  id: string;
  name: string;
  address?: string;
  neighborhood?: string | null;
  since?: number | null;
  specialty?: string | null;
  map_url?: string | null;
}

/** The cafés of a `recommend_cafe` structuredContent, dropping malformed rows. */
export function readCafes(structured: Record<string, unknown> | null | undefined): Cafe[] {
  const rows = structured?.cafes;
  if (!Array.isArray(rows)) return [];
  return rows
    .filter((r): r is Record<string, unknown> => Boolean(r) && typeof r === "object")
    .filter((r) => typeof r.name === "string" && r.name !== "")
    .map((r) => ({ name: r.name as string, address: typeof r.address === "string" ? r.address : "" }));
}

/** `_meta.cafesById` re-keyed by name: the structured list carries names, not ids. */
export function detailsByName(cafesById: unknown): Map<string, CafeDetails> {
  const byName = new Map<string, CafeDetails>();
  if (!cafesById || typeof cafesById !== "object") return byName;
  for (const [key, value] of Object.entries(cafesById as Record<string, unknown>)) {
    if (!value || typeof value !== "object") continue;
    const detail = value as Partial<CafeDetails>;
    if (typeof detail.name !== "string" || !detail.name) continue;
    byName.set(detail.name, { ...detail, id: typeof detail.id === "string" && detail.id ? detail.id : key } as CafeDetails);
  }
  return byName;
}

/** OpenStreetMap's search page for a café: `https://www.openstreetmap.org/search?query=<name, address>`. */
export function osmSearchUrl(name: string, address: string): string {
  const query = [name, address].map((s) => s.trim()).filter(Boolean).join(", ");
  return `https://www.openstreetmap.org/search?query=${encodeURIComponent(query)}`;
}

/** `url` when it is an absolute https URL, else null (never put anything else in openLink). */
export function httpsUrl(url: unknown): string | null {
  if (typeof url !== "string" || !url) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

/** The server's `map_url` when usable, else the same OpenStreetMap search built here. */
export function mapUrl(cafe: Cafe, detail?: CafeDetails | null): string {
  return httpsUrl(detail?.map_url) ?? osmSearchUrl(cafe.name, detail?.address || cafe.address);
}

/**
 * The widget's language: the host's locale when it is one we speak, else the server's
 * `_meta.locale` (the language it answered in), else English.
 */
export function pickLanguage(hostLocale: string | null | undefined, metaLocale: unknown): string {
  const supported = LANGUAGES as readonly string[];
  const primary = (tag: string) => tag.toLowerCase().replace("_", "-").split("-")[0];
  if (hostLocale && supported.includes(primary(hostLocale))) return language(hostLocale, supported);
  if (typeof metaLocale === "string" && metaLocale && supported.includes(primary(metaLocale))) {
    return language(metaLocale, supported);
  }
  return "en";
}

/** The key a favourite is saved under: the café's id when the details are known, else its name. */
export function favouriteKey(cafe: Cafe, detail?: CafeDetails | null): string {
  return detail?.id || cafe.name;
}

/** Whether a café is among the saved favourites (saved by id or, without details, by name). */
export function isFavourite(saved: readonly string[], cafe: Cafe, detail?: CafeDetails | null): boolean {
  return saved.includes(favouriteKey(cafe, detail)) || saved.includes(cafe.name);
}

/**
 * The saved favourites with this café turned on or off: on adds its key (id, else name); off removes
 * both its id and its name, so a café once saved by name can be turned off too. Order kept, no duplicates.
 */
export function setFavourite(saved: readonly string[], cafe: Cafe, detail: CafeDetails | null | undefined, on: boolean): string[] {
  const key = favouriteKey(cafe, detail);
  const rest = saved.filter((x) => x !== key && x !== cafe.name);
  return on ? [...rest, key] : rest;
}

/** The saved favourites of a widget state's privateContent (strings only). */
export function readFavourites(privateContent: unknown): string[] {
  const favs = (privateContent as { favourites?: unknown } | null | undefined)?.favourites;
  return Array.isArray(favs) ? favs.filter((x): x is string => typeof x === "string") : [];
}
