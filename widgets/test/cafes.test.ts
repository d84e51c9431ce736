import { describe, expect, it } from "vitest";
import {
  detailsByName,
  favouriteKey,
  httpsUrl,
  isFavourite,
  mapUrl,
  osmSearchUrl,
  pickLanguage,
  pinsOf,
  readCafes,
  readFavourites,
  readMap,
  setFavourite,
  spreadOffsets,
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

describe("the cafés' map", () => {
  const tiles = "https://tile.example.org/{z}/{x}/{y}.png";

  it("takes a tile template with z, x, y over http(s) only, and an https attribution link", () => {
    const credit = { attribution: "© OSM", attributionUrl: "https://osm.example/c" };
    expect(readMap({ tiles, ...credit })).toEqual({
      tiles,
      origin: "https://tile.example.org",
      attribution: "© OSM",
      attributionUrl: "https://osm.example/c",
    });
    expect(readMap({ tiles, attributionUrl: "javascript:alert(1)" })).toEqual({
      tiles,
      origin: "https://tile.example.org",
      attribution: "",
      attributionUrl: null,
    });
    expect(readMap({ tiles: "javascript:{z}{x}{y}" })).toBeNull();
    expect(readMap({ tiles: "https://{s}.tile.example.org/{z}/{x}/{y}.png" })).toBeNull();
    expect(readMap({ tiles: "https://{z}/{x}/{y}" })).toBeNull();
    expect(readMap({ tiles: "https://tile.example.org/{z}/{x}/{y}.png{foo}" })).toBeNull();
    expect(readMap({ tiles: "https://tile.example.org/{z}/{x}.png" })).toBeNull();
    expect(readMap(null)).toBeNull();
    expect(readMap("https://tile.example.org/{z}/{x}/{y}.png")).toBeNull();
  });

  it("pins the cafés that have a place, numbered as the list shows them", () => {
    const cafes = [flore, { name: "Nowhere", address: "" }, { name: "Deux Magots", address: "" }];
    const byName = detailsByName({
      a: { ...floreDetail, lat: 48.8542, lon: 2.3326 },
      b: { id: "b", name: "Nowhere", lat: null, lon: 2 },
      c: { id: "c", name: "Deux Magots", lat: 48.854, lon: 2.3333 },
      d: { id: "d", name: "Off the globe", lat: 91, lon: 0 },
    });
    expect(pinsOf(cafes, byName)).toEqual([
      { id: "paris-cafe-de-flore", name: flore.name, number: 1, lat: 48.8542, lon: 2.3326 },
      { id: "c", name: "Deux Magots", number: 3, lat: 48.854, lon: 2.3333 },
    ]);
    expect(pinsOf([{ name: "Off the globe", address: "" }], byName)).toEqual([]);
  });

  it("leaves pins apart where they are and sets close ones around their centre", () => {
    const offsets = spreadOffsets(
      [
        { id: "alone", x: 0, y: 0 },
        { id: "a", x: 100, y: 100 },
        { id: "b", x: 104, y: 101 },
        { id: "c", x: 300, y: 0 },
      ],
      30,
    );
    expect(offsets.get("alone")).toEqual({ dx: 0, dy: 0 });
    expect(offsets.get("c")).toEqual({ dx: 0, dy: 0 });
    const a = offsets.get("a")!;
    const b = offsets.get("b")!;
    const placed = [
      [100 + a.dx, 100 + a.dy],
      [104 + b.dx, 101 + b.dy],
    ];
    const apart = Math.hypot(placed[0][0] - placed[1][0], placed[0][1] - placed[1][1]);
    expect(apart).toBeGreaterThanOrEqual(30);
    // Around their centre, each on its own side: a (west, a little north) stays west and north.
    expect((placed[0][0] + placed[1][0]) / 2).toBeCloseTo(102, 5);
    expect(placed[0][0]).toBeLessThan(placed[1][0]);
    expect(placed[0][1]).toBeLessThan(placed[1][1]);
  });

  it("sets pins on the very same point clockwise from the top, in list order", () => {
    const same = ["1", "2", "3"].map((id) => ({ id, x: 50, y: 50 }));
    const offsets = spreadOffsets(same, 30);
    const [one, two, three] = same.map((p) => offsets.get(p.id)!);
    expect(one.dx).toBeCloseTo(0, 9);
    expect(one.dy).toBeLessThan(0); // the top
    expect(two.dx).toBeGreaterThan(0); // then clockwise: right, lower
    expect(three.dx).toBeLessThan(0);
  });

  it("joins a chain of close pins into one group, each far enough from its neighbours", () => {
    const points = [0, 20, 40, 60].map((x, i) => ({ id: String(i), x, y: 0 }));
    const offsets = spreadOffsets(points, 30);
    const placed = points.map((p) => [p.x + offsets.get(p.id)!.dx, p.y + offsets.get(p.id)!.dy]);
    for (let i = 0; i < placed.length; i++) {
      for (let j = i + 1; j < placed.length; j++) {
        const apart = Math.hypot(placed[i][0] - placed[j][0], placed[i][1] - placed[j][1]);
        expect(apart).toBeGreaterThanOrEqual(30 - 1e-9);
      }
    }
  });
});

describe("pins set apart never land on another", () => {
  it("merges a group with a pin its circle reaches, until none is closer than the gap", () => {
    // Two pins 10 px apart (one group, set 30 px apart around their middle: b moves to x = 20)
    // and a third 30.5 px east of b: clear of both where they are, not once b has moved.
    const points = [
      { id: "a", x: 0, y: 0 },
      { id: "b", x: 10, y: 0 },
      { id: "c", x: 40.5, y: 0 },
    ];
    const offsets = spreadOffsets(points, 30);
    const placed = points.map((p) => [p.x + offsets.get(p.id)!.dx, p.y + offsets.get(p.id)!.dy]);
    for (let i = 0; i < placed.length; i++) {
      for (let j = i + 1; j < placed.length; j++) {
        const apart = Math.hypot(placed[i][0] - placed[j][0], placed[i][1] - placed[j][1]);
        expect(apart).toBeGreaterThanOrEqual(30 - 1e-6);
      }
    }
  });
});
