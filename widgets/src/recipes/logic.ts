// Recipes: what a tool result means for the widget, as pure functions (tested in test/recipes.test.ts).
// The widget is the template of list_saved_recipes, save_recipe and delete_saved_recipe, so its first result
// may be any of the three; later results come from its own calls.
import { needsSignIn, resultText } from "../bridge/bridge";
import type { Json, ToolResult } from "../bridge/types";

export interface Recipe {
  id: string;
  title: string;
}

/** Where a result came from: the host's first result, or one of the widget's own calls. */
export type Origin = "first" | "list" | "save" | "delete";

export type Outcome =
  | { kind: "signed-out"; message: string }
  | { kind: "error"; message: string }
  | { kind: "list"; recipes: Recipe[] }
  | { kind: "saved"; recipe: Recipe; created: boolean }
  | { kind: "deleted"; recipeId: string; deleted: boolean }
  | { kind: "unknown" };

export type Notice =
  | { key: "saved" | "alreadySaved" | "linkUpdated" | "deleted"; title: string }
  | { key: "deletedUnknown" | "notFound" };

export interface RecipesView {
  status: "loading" | "ready" | "error" | "signed-out";
  recipes: Recipe[];
  /** The error text when status is "error" (a result's text, possibly empty: the widget then says why). */
  message: string;
  /** What the last action did (shown above the list). */
  notice: Notice | null;
  /** A failed save/delete (or refresh) while a list is shown: the list stays. "" = no text (say so generically). */
  actionError: string | null;
  lastSaved: Recipe | null;
}

export const INITIAL_VIEW: RecipesView = {
  status: "loading",
  recipes: [],
  message: "",
  notice: null,
  actionError: null,
  lastSaved: null,
};

// Server limits (app/features/recipes/service.py).
export const MAX_TITLE = 200;
export const MAX_URL = 2048;

function isRecipe(value: unknown): value is Recipe {
  const r = value as Recipe | null;
  return r !== null && typeof r === "object" && typeof r.id === "string" && r.id !== "" && typeof r.title === "string";
}

/** Read a tool result of any of the three tools. */
export function outcomeOf(result: ToolResult | null | undefined): Outcome {
  if (!result) return { kind: "unknown" };
  if (needsSignIn(result)) return { kind: "signed-out", message: resultText(result) };
  if (result.isError) return { kind: "error", message: resultText(result) };
  const sc = (result.structuredContent ?? {}) as Json;
  if (Array.isArray(sc.recipes)) return { kind: "list", recipes: sc.recipes.filter(isRecipe) };
  if (isRecipe(sc.recipe)) return { kind: "saved", recipe: sc.recipe, created: sc.created !== false };
  if (typeof sc.deleted === "boolean" && typeof sc.recipe_id === "string") {
    return { kind: "deleted", recipeId: sc.recipe_id, deleted: sc.deleted };
  }
  return { kind: "unknown" };
}

/** Which tool the host's first call was, from its arguments (null until the host delivers them). */
export function originOfInput(input: Json | null | undefined): Origin {
  if (input && typeof input.recipe_id === "string") return "delete";
  if (input && typeof input.title === "string") return "save";
  return "list";
}

/** The list with `recipe` first (newest first, as the server orders it), without a duplicate. */
export function withSaved(recipes: Recipe[], recipe: Recipe): Recipe[] {
  return [recipe, ...recipes.filter((r) => r.id !== recipe.id)];
}

export function withoutRecipe(recipes: Recipe[], id: string): Recipe[] {
  return recipes.filter((r) => r.id !== id);
}

/**
 * The next view after an outcome, and whether the list must be fetched again (after a save or a delete, and
 * after the host's first result when it was a failed save/delete: the user still wants to see the list).
 */
export function reduce(
  view: RecipesView,
  outcome: Outcome,
  origin: Origin,
  linkGiven = false,
): { view: RecipesView; refresh: boolean } {
  switch (outcome.kind) {
    case "signed-out":
      return { view: { ...INITIAL_VIEW, status: "signed-out", message: outcome.message }, refresh: false };
    case "error":
      // With a list on screen, a failed action or refresh leaves the list and says what went wrong above it.
      if (origin !== "first" && view.status === "ready") {
        return { view: { ...view, actionError: outcome.message }, refresh: false };
      }
      return { view: { ...view, status: "error", message: outcome.message, notice: null }, refresh: false };
    case "list":
      return { view: { ...view, status: "ready", recipes: outcome.recipes, message: "" }, refresh: false };
    case "saved": {
      const { recipe, created } = outcome;
      const key = created ? "saved" : linkGiven ? "linkUpdated" : "alreadySaved";
      const ready = view.status === "ready";
      return {
        view: {
          ...view,
          recipes: ready ? withSaved(view.recipes, recipe) : view.recipes,
          notice: { key, title: recipe.title },
          actionError: null,
          lastSaved: recipe,
        },
        refresh: true,
      };
    }
    case "deleted": {
      const known = view.recipes.find((r) => r.id === outcome.recipeId);
      const notice: Notice = !outcome.deleted
        ? { key: "notFound" }
        : known
          ? { key: "deleted", title: known.title }
          : { key: "deletedUnknown" };
      const lastSaved = view.lastSaved?.id === outcome.recipeId ? null : view.lastSaved;
      return {
        view: { ...view, recipes: withoutRecipe(view.recipes, outcome.recipeId), notice, actionError: null, lastSaved },
        refresh: true,
      };
    }
    case "unknown":
      return { view: { ...view, status: "error", message: "" }, refresh: false };
  }
}

/** The host's first result: a failed save or delete still shows the list, with the error above it. */
export function reduceFirst(outcome: Outcome, input: Json | null | undefined): { view: RecipesView; refresh: boolean } {
  const origin = originOfInput(input);
  if (outcome.kind === "error" && (origin === "save" || origin === "delete")) {
    return { view: { ...INITIAL_VIEW, actionError: outcome.message }, refresh: true };
  }
  const linkGiven = typeof input?.source_url === "string" && input.source_url !== "";
  return reduce(INITIAL_VIEW, outcome, "first", linkGiven);
}

export type FormError = "titleRequired" | "titleTooLong" | "urlInvalid" | "urlTooLong";

/** save_recipe's arguments from the form, or what is wrong with it (the server checks again). */
export function saveArgs(title: string, url: string): { ok: true; args: Json } | { ok: false; error: FormError } {
  const clean = title.split(/\s+/).filter(Boolean).join(" ");
  if (!clean) return { ok: false, error: "titleRequired" };
  if (clean.length > MAX_TITLE) return { ok: false, error: "titleTooLong" };
  const link = url.trim();
  if (!link) return { ok: true, args: { title: clean } };
  if (link.length > MAX_URL) return { ok: false, error: "urlTooLong" };
  let parsed: URL;
  try {
    parsed = new URL(link);
  } catch {
    return { ok: false, error: "urlInvalid" };
  }
  if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.hostname) {
    return { ok: false, error: "urlInvalid" };
  }
  return { ok: true, args: { title: clean, source_url: link } };
}

/** What the model sees of the widget (small), and what stays with it. */
export function widgetStateOf(view: RecipesView): { modelContent: Json; privateContent: Json } {
  const modelContent: Json = { recipeCount: view.recipes.length };
  if (view.lastSaved) modelContent.lastSaved = view.lastSaved.title;
  return {
    modelContent,
    privateContent: { recipeIds: view.recipes.map((r) => r.id), lastSavedId: view.lastSaved?.id ?? null },
  };
}

/** "one" or "other" for the host locale (Intl.PluralRules; English rules for an unusable locale tag). */
export function pluralCategory(locale: string, n: number): "one" | "other" {
  let rules: Intl.PluralRules;
  try {
    rules = new Intl.PluralRules(locale);
  } catch {
    rules = new Intl.PluralRules("en");
  }
  return rules.select(n) === "one" ? "one" : "other";
}
