import { describe, expect, it } from "vitest";
import type { ToolResult } from "../src/bridge/types";
import {
  INITIAL_VIEW,
  type RecipesView,
  originOfInput,
  outcomeOf,
  pluralCategory,
  reduce,
  reduceFirst,
  saveArgs,
  widgetStateOf,
  withSaved,
} from "../src/recipes/logic";
import { TEXT } from "../src/recipes/text";

const list = (...titles: string[]): ToolResult => ({
  content: [{ type: "text", text: "…" }],
  structuredContent: { recipes: titles.map((title, i) => ({ id: `rcp_${i}`, title })) },
});
const challenge: ToolResult = {
  isError: true,
  content: [{ type: "text", text: "Saved recipes needs the user's account" }],
  _meta: { "mcp/www_authenticate": ['Bearer resource_metadata="https://x/.well-known/oauth-protected-resource/mcp"'] },
};
const ready = (titles: string[]): RecipesView => ({
  ...INITIAL_VIEW,
  status: "ready",
  recipes: titles.map((title, i) => ({ id: `rcp_${i}`, title })),
});

describe("outcomeOf", () => {
  it("reads each tool's result", () => {
    expect(outcomeOf(list("Soup"))).toEqual({ kind: "list", recipes: [{ id: "rcp_0", title: "Soup" }] });
    expect(outcomeOf({ structuredContent: { recipe: { id: "rcp_1", title: "Pie" }, created: false } })).toEqual({
      kind: "saved",
      recipe: { id: "rcp_1", title: "Pie" },
      created: false,
    });
    expect(outcomeOf({ structuredContent: { deleted: true, recipe_id: "rcp_1" } })).toEqual({
      kind: "deleted",
      recipeId: "rcp_1",
      deleted: true,
    });
  });

  it("tells a sign-in challenge from a plain error", () => {
    expect(outcomeOf(challenge).kind).toBe("signed-out");
    expect(outcomeOf({ isError: true, content: [{ type: "text", text: "The list already holds 200 recipes" }] })).toEqual({
      kind: "error",
      message: "The list already holds 200 recipes",
    });
  });

  it("a bare challenge (window.openai hosts drop isError) is signed out too", () => {
    expect(outcomeOf({ _meta: { "mcp/www_authenticate": ["Bearer x"] } }).kind).toBe("signed-out");
    expect(outcomeOf({ structuredContent: { recipes: [] }, _meta: { "mcp/www_authenticate": [] } }).kind).toBe("list");
  });

  it("drops malformed rows and flags unknown shapes", () => {
    const r = outcomeOf({ structuredContent: { recipes: [{ id: "a", title: "A" }, { id: "" }, null, "x"] } });
    expect(r).toEqual({ kind: "list", recipes: [{ id: "a", title: "A" }] });
    expect(outcomeOf({ structuredContent: {} }).kind).toBe("unknown");
    expect(outcomeOf(null).kind).toBe("unknown");
  });
});

describe("reduce", () => {
  it("a first list shows it; an empty one too", () => {
    expect(reduceFirst(outcomeOf(list("A", "B")), {}).view.status).toBe("ready");
    const empty = reduceFirst(outcomeOf(list()), null);
    expect(empty.view.status).toBe("ready");
    expect(empty.view.recipes).toEqual([]);
    expect(empty.refresh).toBe(false);
  });

  it("a first save shows a notice and asks for the list", () => {
    const step = reduceFirst(outcomeOf({ structuredContent: { recipe: { id: "r", title: "Pie" }, created: true } }), {
      title: "Pie",
    });
    expect(step.refresh).toBe(true);
    expect(step.view.notice).toEqual({ key: "saved", title: "Pie" });
    expect(step.view.lastSaved).toEqual({ id: "r", title: "Pie" });
    // the list then arrives, and the notice stays
    const after = reduce(step.view, outcomeOf(list("Pie", "Soup")), "list").view;
    expect(after.status).toBe("ready");
    expect(after.notice).toEqual({ key: "saved", title: "Pie" });
  });

  it("an existing title saved again with a link says the link changed", () => {
    const saved = outcomeOf({ structuredContent: { recipe: { id: "r", title: "Pie" }, created: false } });
    expect(reduceFirst(saved, { title: "pie", source_url: "https://e.com" }).view.notice).toEqual({ key: "linkUpdated", title: "Pie" });
    expect(reduceFirst(saved, { title: "pie" }).view.notice).toEqual({ key: "alreadySaved", title: "Pie" });
  });

  it("a first failed save still loads the list, with the error above it", () => {
    const step = reduceFirst({ kind: "error", message: "full" }, { title: "Pie" });
    expect(step.refresh).toBe(true);
    expect(step.view.actionError).toBe("full");
    const after = reduce(step.view, outcomeOf(list("A")), "list").view;
    expect(after.status).toBe("ready");
    expect(after.actionError).toBe("full");
  });

  it("a first failed list is the error state", () => {
    const step = reduceFirst({ kind: "error", message: "db down" }, {});
    expect(step.view.status).toBe("error");
    expect(step.view.message).toBe("db down");
    expect(step.refresh).toBe(false);
  });

  it("a challenge anywhere signs out", () => {
    expect(reduceFirst(outcomeOf(challenge), null).view.status).toBe("signed-out");
    const view = reduce(ready(["A"]), outcomeOf(challenge), "save").view;
    expect(view.status).toBe("signed-out");
    expect(view.recipes).toEqual([]);
  });

  it("a failed action keeps the list", () => {
    const view = reduce(ready(["A"]), { kind: "error", message: "nope" }, "delete").view;
    expect(view.status).toBe("ready");
    expect(view.recipes).toHaveLength(1);
    expect(view.actionError).toBe("nope");
  });

  it("a delete removes the row, names it, and refreshes", () => {
    const step = reduce(ready(["A", "B"]), { kind: "deleted", recipeId: "rcp_0", deleted: true }, "delete");
    expect(step.view.recipes.map((r) => r.title)).toEqual(["B"]);
    expect(step.view.notice).toEqual({ key: "deleted", title: "A" });
    expect(step.refresh).toBe(true);
    expect(reduce(ready([]), { kind: "deleted", recipeId: "x", deleted: false }, "delete").view.notice).toEqual({ key: "notFound" });
    expect(reduceFirst({ kind: "deleted", recipeId: "x", deleted: true }, { recipe_id: "x" }).view.notice).toEqual({ key: "deletedUnknown" });
  });

  it("a save puts the recipe first without duplicating it", () => {
    const recipes = withSaved([{ id: "a", title: "A" }, { id: "b", title: "B" }], { id: "b", title: "B" });
    expect(recipes.map((r) => r.id)).toEqual(["b", "a"]);
  });
});

describe("originOfInput", () => {
  it("names the tool from its arguments", () => {
    expect(originOfInput({ recipe_id: "r" })).toBe("delete");
    expect(originOfInput({ title: "Pie" })).toBe("save");
    expect(originOfInput({})).toBe("list");
    expect(originOfInput(null)).toBe("list");
  });
});

describe("saveArgs", () => {
  it("collapses whitespace and omits an empty link", () => {
    expect(saveArgs("  Lentil \n soup ", "  ")).toEqual({ ok: true, args: { title: "Lentil soup" } });
  });
  it("keeps an http(s) link", () => {
    expect(saveArgs("Pie", " https://example.com/pie ")).toEqual({
      ok: true,
      args: { title: "Pie", source_url: "https://example.com/pie" },
    });
  });
  it("refuses what the server would", () => {
    expect(saveArgs("   ", "")).toEqual({ ok: false, error: "titleRequired" });
    expect(saveArgs("x".repeat(201), "")).toEqual({ ok: false, error: "titleTooLong" });
    expect(saveArgs("Pie", "ftp://example.com")).toEqual({ ok: false, error: "urlInvalid" });
    expect(saveArgs("Pie", "not a link")).toEqual({ ok: false, error: "urlInvalid" });
    expect(saveArgs("Pie", `https://e.com/${"a".repeat(2048)}`)).toEqual({ ok: false, error: "urlTooLong" });
  });
});

describe("widget state", () => {
  it("gives the model the count and the last saved title", () => {
    const view = { ...ready(["A", "B"]), lastSaved: { id: "rcp_0", title: "A" } };
    expect(widgetStateOf(view)).toEqual({
      modelContent: { recipeCount: 2, lastSaved: "A" },
      privateContent: { recipeIds: ["rcp_0", "rcp_1"], lastSavedId: "rcp_0" },
    });
    expect(widgetStateOf(ready([])).modelContent).toEqual({ recipeCount: 0 });
  });
});

describe("strings", () => {
  it("every language has every key", () => {
    const keys = Object.keys(TEXT.en).sort();
    for (const lang of ["fr", "es", "pt", "zh"]) expect(Object.keys(TEXT[lang] ?? {}).sort()).toEqual(keys);
  });
  it("plural categories follow the locale", () => {
    expect(pluralCategory("en", 1)).toBe("one");
    expect(pluralCategory("en", 2)).toBe("other");
    expect(pluralCategory("fr", 0)).toBe("one");
    expect(pluralCategory("zh", 1)).toBe("other");
    expect(pluralCategory("!!", 1)).toBe("one");
  });
});
