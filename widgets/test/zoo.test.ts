// The zoo's IUCN badge: a status named in the data -> its Red List code, colours and names.
import { describe, expect, it } from "vitest";
import { COLOURS, NAMES, categoryName, categoryOf } from "../src/zoo/iucn";

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

describe("IUCN categories", () => {
  it("reads the data's English names, any case, and nothing else", () => {
    expect(categoryOf("Critically Endangered")).toBe("CR");
    expect(categoryOf(" least concern ")).toBe("LC");
    expect(categoryOf("Endangered")).toBe("EN");
    expect(categoryOf("Fine")).toBeNull();
    expect(categoryOf(3)).toBeNull();
  });

  it("names each category in every language, English where the widget does not speak one", () => {
    for (const names of Object.values(NAMES)) expect(Object.keys(names).sort()).toEqual(Object.keys(COLOURS).sort());
    expect(categoryName("VU", "fr-FR")).toBe("Vulnérable");
    expect(categoryName("VU", "de-DE")).toBe("Vulnerable");
  });

  it("writes each code in a colour that contrasts with its badge (WCAG AA, 4.5:1)", () => {
    for (const { bg, fg } of Object.values(COLOURS)) {
      const [a, b] = [luminance(bg), luminance(fg)].sort((x, y) => y - x);
      expect((a! + 0.05) / (b! + 0.05)).toBeGreaterThanOrEqual(4.5);
    }
  });
});

describe("a picture for every animal", () => {
  it("draws each of the zoo's 30 species, each differently, within a few KB", async () => {
    const { PICTURES, pictureOf } = await import("../src/zoo/pictures");
    const data = await import("../../app/features/zoo/data/animals.json");
    const animals = data.default as { scientific_name: string }[];
    // By scientific name: the same whatever language the species' own name is shown in.
    const species = [...new Set(animals.map((a) => a.scientific_name))];
    expect(species).toHaveLength(30);
    for (const name of species) expect(pictureOf(name), name).toMatch(/^<circle cx="32" cy="32" r="31"/);
    expect(new Set(Object.values(PICTURES)).size).toBe(Object.keys(PICTURES).length);
    const bytes = Object.values(PICTURES).join("").length;
    expect(bytes).toBeLessThan(20_000);
    expect(pictureOf("Unicorn")).toBeNull();
  });
});
