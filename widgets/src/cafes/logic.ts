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
  lat?: number | null;
  lon?: number | null;
}

/** The server's map settings (`_meta.map`): a tile URL template and the attribution it asks for. */
export interface MapSource {
  tiles: string;
  /** The tiles' one origin (what the widget's CSP declares). */
  origin: string;
  attribution: string;
  attributionUrl: string | null;
}

/** A café with a place on the map, numbered as the list numbers it (1-based). */
export interface Pin {
  id: string;
  name: string;
  number: number;
  lat: number;
  lon: number;
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

/**
 * `_meta.map` when usable: an http(s) tile template with {z}, {x} and {y}, else null (no map,
 * the list alone). The attribution link is kept only when it is https.
 */
export function readMap(raw: unknown): MapSource | null {
  if (!raw || typeof raw !== "object") return null;
  const { tiles, attribution, attributionUrl } = raw as Record<string, unknown>;
  if (typeof tiles !== "string" || !/^https?:\/\//.test(tiles)) return null;
  if (!["{z}", "{x}", "{y}"].every((p) => tiles.includes(p))) return null;
  // One origin, with no placeholder in it ({s} subdomains would be origins no CSP declared).
  // Filled in two ways, the origin stays the same: no placeholder sits in the host.
  let origin: string;
  try {
    origin = new URL(tiles.replace(/\{[xyz]\}/g, "0")).origin;
    if (new URL(tiles.replace(/\{[xyz]\}/g, "1")).origin !== origin) return null;
  } catch {
    return null;
  }
  if (/[{}]/.test(tiles.replace(/\{[xyz]\}/g, "")) || origin === "null") return null;
  return {
    tiles,
    origin,
    attribution: typeof attribution === "string" ? attribution : "",
    attributionUrl: httpsUrl(attributionUrl),
  };
}

const isDegree = (v: unknown, limit: number): v is number =>
  typeof v === "number" && Number.isFinite(v) && Math.abs(v) <= limit;

// A result lists a few cafés; a hostile one could list thousands, each a pin to lay out.
export const MAX_PINS = 100;

/** The cafés that have a place (valid latitude and longitude), numbered in list order. */
export function pinsOf(cafes: readonly Cafe[], byName: Map<string, CafeDetails>): Pin[] {
  const pins: Pin[] = [];
  cafes.forEach((cafe, index) => {
    const detail = byName.get(cafe.name);
    if (detail && isDegree(detail.lat, 90) && isDegree(detail.lon, 180)) {
      const { lat, lon } = detail;
      pins.push({ id: detail.id, name: cafe.name, number: index + 1, lat, lon });
    }
  });
  return pins.slice(0, MAX_PINS);
}

export interface Point {
  id: string;
  x: number;
  y: number;
}

/**
 * How far to move each pin (in pixels) so that none covers another: pins closer than `gap` to a
 * pin of their group are set on a circle around the group's centre, each in its own direction
 * from that centre (one to the north-west stays north-west of the others), pins on the very same
 * point clockwise from the top in the order given; a pin alone stays on its point. Two cafés
 * across a street are one point at city scale.
 */
export function spreadOffsets(
  points: readonly Point[],
  gap: number,
): Map<string, { dx: number; dy: number }> {
  let groups: Point[][] = [];
  for (const point of points) {
    const close = (q: Point) => Math.hypot(q.x - point.x, q.y - point.y) < gap;
    const near = groups.filter((g) => g.some(close));
    // A point near two groups joins them into one.
    groups = [...groups.filter((g) => !near.includes(g)), [...near.flat(), point]];
  }
  // A group set around its point may now cover a pin of another: the two become one group, set
  // around their common point, until no two pins are closer than `gap` (at most a merge a pin).
  let offsets = placeGroups(points, groups, gap);
  for (let round = 0; round < points.length; round++) {
    const at = (p: Point) => ({ x: p.x + offsets.get(p.id)!.dx, y: p.y + offsets.get(p.id)!.dy });
    const clash = (a: Point[], b: Point[]) =>
      a.some((p) => b.some((q) => Math.hypot(at(p).x - at(q).x, at(p).y - at(q).y) < gap - 1e-6));
    const pair = groups.flatMap((a, i) => groups.slice(i + 1).map((b) => [a, b] as const))
      .find(([a, b]) => clash(a, b));
    if (!pair) break;
    groups = [...groups.filter((g) => g !== pair[0] && g !== pair[1]), [...pair[0], ...pair[1]]];
    offsets = placeGroups(points, groups, gap);
  }
  return offsets;
}

function placeGroups(
  points: readonly Point[],
  groups: Point[][],
  gap: number,
): Map<string, { dx: number; dy: number }> {
  const offsets = new Map<string, { dx: number; dy: number }>();
  for (const group of groups) {
    if (group.length === 1) {
      offsets.set(group[0].id, { dx: 0, dy: 0 });
      continue;
    }
    const cx = group.reduce((s, p) => s + p.x, 0) / group.length;
    const cy = group.reduce((s, p) => s + p.y, 0) / group.length;
    // Neighbours on the circle stand `gap` apart: the chord between them is 2r·sin(π/n).
    const radius = gap / (2 * Math.sin(Math.PI / group.length));
    const inOrder = points.filter((p) => group.includes(p));
    const bearing = (p: Point) => {
      const [x, y] = [p.x - cx, p.y - cy];
      // From the top, clockwise (y grows downwards); a pin on the centre itself counts as the top.
      return Math.hypot(x, y) < 1e-9 ? 0 : (Math.atan2(y, x) + (5 * Math.PI) / 2) % (2 * Math.PI);
    };
    const ordered = [...inOrder].sort((a, b) => bearing(a) - bearing(b)); // stable: ties keep order
    const start = -Math.PI / 2 + bearing(ordered[0]!);
    ordered.forEach((p, i) => {
      const angle = start + (2 * Math.PI * i) / group.length;
      const dx = cx + radius * Math.cos(angle) - p.x;
      offsets.set(p.id, { dx, dy: cy + radius * Math.sin(angle) - p.y });
    });
  }
  return offsets;
}
