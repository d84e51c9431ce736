// What a widget may open or render as a link: nothing but http(s) (no javascript:, data:, blob:).

/** `url` normalised when it is an absolute http(s) URL, else null. */
export function httpUrl(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}
