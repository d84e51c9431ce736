import { describe, expect, it } from "vitest";
import {
  detailsByName,
  favouriteKey,
  httpsUrl,
  isFavourite,
  mapUrl,
  osmSearchUrl,
  pickLanguage,
  readCafes,
  readFavourites,
  setFavourite,
} from "../src/cafes/logic";

const flore = { name: "Café de Flore", address: "172 Boulevard Saint-Germain, 75006 Paris" };
const floreDetail = { id: "paris-cafe-de-flore", ...flore, neighborhood: "Saint-Germain-des-Prés", since: 1887, specialty: "Art Deco" };

describe("cafes helpers", () => {
  it("builds the OpenStreetMap search URL from name and address", () => {
    expect(osmSearchUrl(flore.name, flore.address)).toBe(
      "https://www.openstreetmap.org/search?query=Caf%C3%A9%20de%20Flore%2C%20172%20Boulevard%20Saint-Germain%2C%2075006%20Paris",
    );
    expect(osmSearchUrl("Le Procope", "13 Rue de l'Ancienne Comédie & co")).toContain("%26%20co");
    expect(osmSearchUrl("Only name", "  ")).toBe("https://www.openstreetmap.org/search?query=Only%20name");
    const url = new URL(osmSearchUrl(flore.name, flore.address));
    expect(url.searchParams.get("query")).toBe(`${flore.name}, ${flore.address}`);
  });

  it("prefers the server's https map_url, else builds one", () => {
    const server = "https://www.openstreetmap.org/search?query=Caf%C3%A9+de+Flore";
    expect(mapUrl(flore, { ...floreDetail, map_url: server })).toBe(server);
    expect(mapUrl(flore, floreDetail)).toBe(osmSearchUrl(flore.name, flore.address));
    expect(mapUrl(flore, { ...floreDetail, map_url: "javascript:alert(1)" })).toBe(osmSearchUrl(flore.name, flore.address));
    expect(mapUrl(flore, null)).toBe(osmSearchUrl(flore.name, flore.address));
  });

  it("accepts only https URLs", () => {
    expect(httpsUrl("https://a.example/x")).toBe("https://a.example/x");
    expect(httpsUrl("http://a.example/x")).toBeNull();
    expect(httpsUrl("nonsense")).toBeNull();
    expect(httpsUrl(42)).toBeNull();
  });

  it("reads cafés and keys the details by name", () => {
    expect(readCafes({ city: "Paris", cafes: [flore, { name: "" }, null, { name: "X" }] })).toEqual([flore, { name: "X", address: "" }]);
    expect(readCafes(undefined)).toEqual([]);
    const byName = detailsByName({ "paris-cafe-de-flore": floreDetail, bad: null, noname: { id: "n" }, keyonly: { name: "K" } });
    expect(byName.get("Café de Flore")?.id).toBe("paris-cafe-de-flore");
    expect(byName.get("K")?.id).toBe("keyonly");
    expect(byName.size).toBe(2);
    expect(detailsByName(undefined).size).toBe(0);
  });

  it("picks the host language, then the server's, then English", () => {
    expect(pickLanguage("fr-FR", "es")).toBe("fr");
    expect(pickLanguage("pt-BR", undefined)).toBe("pt");
    expect(pickLanguage("zh-Hans-CN", "en")).toBe("zh");
    expect(pickLanguage("de-DE", "es")).toBe("es");
    expect(pickLanguage("", "pt")).toBe("pt");
    expect(pickLanguage(undefined, "xx")).toBe("en");
    expect(pickLanguage("es_MX", null)).toBe("es");
  });

  it("saves favourites by id (name without details) and turns them off either way", () => {
    expect(favouriteKey(flore, floreDetail)).toBe("paris-cafe-de-flore");
    expect(favouriteKey(flore, undefined)).toBe("Café de Flore");
    let saved = setFavourite([], flore, floreDetail, true);
    expect(saved).toEqual(["paris-cafe-de-flore"]);
    expect(setFavourite(saved, flore, floreDetail, true)).toEqual(["paris-cafe-de-flore"]);
    expect(isFavourite(saved, flore, floreDetail)).toBe(true);
    saved = setFavourite(["Café de Flore", "other"], flore, floreDetail, false);
    expect(saved).toEqual(["other"]);
    expect(isFavourite(["Café de Flore"], flore, floreDetail)).toBe(true);
    expect(isFavourite([], flore, floreDetail)).toBe(false);
  });

  it("reads saved favourites defensively", () => {
    expect(readFavourites({ favourites: ["a", 1, "b"] })).toEqual(["a", "b"]);
    expect(readFavourites(null)).toEqual([]);
    expect(readFavourites({ favourites: "a" })).toEqual([]);
  });
});
