// Recipes: the template of list_saved_recipes, save_recipe and delete_saved_recipe. Whichever of them the
// model called, the widget ends on the account's list; saving (a small form) and deleting (confirmed inline:
// sandboxed frames block window.confirm) go through the same tools, each followed by a fresh list.
import { useEffect, useRef, useState } from "preact/hooks";
import { useBridge, useSnapshot } from "../bridge";
import type { Json, ToolResult } from "../bridge/types";
import { ConfirmDelete, useConfirmFocus } from "../ui/ConfirmDelete";
import { COMMON, tr } from "../ui/i18n";
import { Frame, type WidgetStateName } from "../ui/mount";
import { httpUrl } from "../ui/urls";
import {
  INITIAL_VIEW,
  MAX_TITLE,
  MAX_URL,
  type FormError,
  type Notice,
  type Origin,
  type Outcome,
  type Recipe,
  type RecipesView,
  outcomeOf,
  pluralCategory,
  reduce,
  reduceFirst,
  saveArgs,
  widgetStateOf,
} from "./logic";
import { TEXT } from "./text";
import "./recipes.css";

export function RecipesWidget() {
  const bridge = useBridge();
  const snap = useSnapshot();
  const locale = snap.context.locale;
  const t = tr(TEXT, locale);
  const common = tr(COMMON, locale);

  const [view, setViewState] = useState<RecipesView>(INITIAL_VIEW);
  const current = useRef(view);
  const listCall = useRef(0);
  const writtenState = useRef("");
  const [busy, setBusy] = useState<"save" | "delete" | "list" | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  // Each recipe's link, by id: from the results' widget-only _meta.linksById, and the links saved here.
  const [links, setLinks] = useState<Record<string, string>>({});

  function noteLinks(result: ToolResult | null | undefined, saved?: { id: string; url: unknown }) {
    const found = linksOf(result?._meta);
    if (saved && typeof saved.url === "string" && saved.url) found[saved.id] = saved.url;
    if (Object.keys(found).length) setLinks((known) => ({ ...known, ...found }));
  }

  async function openRecipeLink(url: string) {
    try {
      // Any site: the host asks the person (ui/open-link) rather than ChatGPT's own allow-list.
      await bridge.openLink(url, { anyOrigin: true });
    } catch (err) {
      bridge.log("recipes.open_link_failed", "warning", undefined, (err as Error).message);
    }
  }

  function setView(next: RecipesView) {
    current.current = next;
    setViewState(next);
    if (next.status !== "ready") return;
    const state = widgetStateOf(next);
    const key = JSON.stringify(state);
    if (key === writtenState.current) return;
    writtenState.current = key;
    bridge.setWidgetState(state).catch((err: Error) => bridge.log("recipes.state_error", "warning", undefined, err.message));
  }

  function apply(step: { view: RecipesView; refresh: boolean }) {
    setView(step.view);
    if (step.refresh) void refresh();
  }

  function applyOutcome(outcome: Outcome, origin: Origin, linkGiven = false) {
    apply(reduce(current.current, outcome, origin, linkGiven));
  }

  async function refresh() {
    const call = ++listCall.current;
    setBusy((b) => b ?? "list");
    let outcome: Outcome;
    try {
      const result = await bridge.callTool("list_saved_recipes", {});
      noteLinks(result);
      outcome = outcomeOf(result);
    } catch (err) {
      outcome = { kind: "error", message: (err as Error).message };
    }
    if (call !== listCall.current) return; // a newer refresh is on its way
    setBusy((b) => (b === "list" ? null : b));
    if (outcome.kind !== "list") bridge.log("recipes.list_failed", "warning", { outcome: outcome.kind });
    applyOutcome(outcome, "list");
  }

  // The host's result (the first one, or a new one for this mount).
  useEffect(() => {
    if (snap.cancelled) {
      setView({ ...INITIAL_VIEW, status: "error", message: common("cancelled") });
      return;
    }
    if (!snap.result) return;
    const first = outcomeOf(snap.result);
    noteLinks(snap.result, first.kind === "saved" ? { id: first.recipe.id, url: snap.input?.source_url } : undefined);
    const step = reduceFirst(first, snap.input);
    apply(step);
    // Re-mounted after the user changed the list here: the host's result is older than the list.
    if (!step.refresh && step.view.status === "ready" && snap.widgetState?.privateContent) void refresh();
  }, [snap.result, snap.cancelled]);

  async function save(args: Json): Promise<boolean> {
    setBusy("save");
    setView({ ...current.current, notice: null, actionError: null });
    let outcome: Outcome;
    try {
      outcome = outcomeOf(await bridge.callTool("save_recipe", args));
      if (outcome.kind === "saved") noteLinks(null, { id: outcome.recipe.id, url: args.source_url });
    } catch (err) {
      outcome = { kind: "error", message: (err as Error).message };
    }
    setBusy(null);
    if (outcome.kind === "saved") {
      bridge.log("recipes.save", "info", { recipe_id: outcome.recipe.id, created: outcome.created, link: "source_url" in args });
    } else {
      bridge.log("recipes.save_failed", "warning", { outcome: outcome.kind });
    }
    applyOutcome(outcome, "save", "source_url" in args);
    return outcome.kind === "saved";
  }

  async function remove(recipe: Recipe) {
    setBusy("delete");
    setView({ ...current.current, notice: null, actionError: null });
    let outcome: Outcome;
    try {
      outcome = outcomeOf(await bridge.callTool("delete_saved_recipe", { recipe_id: recipe.id }));
    } catch (err) {
      outcome = { kind: "error", message: (err as Error).message };
    }
    setBusy(null);
    setConfirming(null);
    if (outcome.kind === "deleted") {
      bridge.log("recipes.delete", "info", { recipe_id: recipe.id, deleted: outcome.deleted });
    } else {
      bridge.log("recipes.delete_failed", "warning", { recipe_id: recipe.id, outcome: outcome.kind });
    }
    applyOutcome(outcome, "delete");
  }

  const shown: WidgetStateName = view.status === "ready" && view.recipes.length === 0 ? "empty" : view.status;
  const message =
    view.status === "signed-out"
      ? t("signedOut")
      : view.status === "error"
        ? view.message || t("unreadable")
        : view.status === "loading"
          ? snap.result
            ? t("loadingList")
            : common("waiting")
          : "";
  const canRefresh = view.status !== "loading" || snap.result !== null;

  const actions = canRefresh ? (
    <button class="btn" data-testid="refresh" disabled={busy !== null} onClick={() => void refresh()}>
      {view.status === "error" ? common("retry") : t("refresh")}
    </button>
  ) : null;

  return (
    <Frame name="recipes" state={shown} message={message} title={t("title")} actions={actions}>
      {view.notice && (
        <p class="rc-notice" role="status" data-testid="notice">
          {noticeText(view.notice, t)}
        </p>
      )}
      {view.actionError !== null && (
        <p class="rc-alert" role="alert" data-testid="action-error">
          {view.actionError || common("error")}
        </p>
      )}
      {shown === "empty" && (
        <p class="state" data-testid="empty">
          {t("empty")}
        </p>
      )}
      {shown === "ready" && (
        <>
          <p class="muted rc-count" data-testid="recipe-count">
            {t(pluralCategory(locale, view.recipes.length) === "one" ? "countOne" : "countOther", {
              n: view.recipes.length.toLocaleString(locale),
            })}
          </p>
          <ul class="list" data-testid="recipe-list" aria-label={t("listLabel")}>
            {view.recipes.map((r) => (
              <RecipeRow
                key={r.id}
                recipe={r}
                confirming={confirming === r.id}
                busy={busy !== null}
                deleting={busy === "delete" && confirming === r.id}
                onAsk={() => setConfirming(r.id)}
                onCancel={() => setConfirming(null)}
                onConfirm={() => void remove(r)}
                link={links[r.id] ?? null}
                onOpenLink={(url) => void openRecipeLink(url)}
                t={t}
              />
            ))}
          </ul>
        </>
      )}
      <SaveForm busy={busy} onSave={save} t={t} />
    </Frame>
  );
}

type T = ReturnType<typeof tr<keyof (typeof TEXT)["en"]>>;

function noticeText(notice: Notice, t: T): string {
  return "title" in notice ? t(notice.key, { title: notice.title }) : t(notice.key);
}

function RecipeRow(props: {
  recipe: Recipe;
  confirming: boolean;
  busy: boolean;
  deleting: boolean;
  onAsk: () => void;
  onCancel: () => void;
  onConfirm: () => void;
  link: string | null;
  onOpenLink: (url: string) => void;
  t: T;
}) {
  const { recipe, t } = props;
  const link = httpUrl(props.link);
  const { noButton, deleteButton } = useConfirmFocus(props.confirming);

  return (
    <li class="card rc-item" data-testid="recipe" data-recipe-id={recipe.id}>
      <div class="row">
        <span class="grow rc-title" data-testid="recipe-title">
          {recipe.title}
        </span>
        {!props.confirming && (
          <button
            ref={deleteButton}
            class="btn danger"
            data-testid="delete"
            aria-label={t("deleteLabel", { title: recipe.title })}
            disabled={props.busy}
            onClick={props.onAsk}
          >
            {t("delete")}
          </button>
        )}
      </div>
      {link && (
        <a
          class="rc-link ellipsis"
          href={link}
          data-testid="recipe-link"
          title={link}
          onClick={(ev) => {
            ev.preventDefault();
            props.onOpenLink(link);
          }}
        >
          {linkText(link)}
        </a>
      )}
      {props.confirming && (
        <ConfirmDelete
          class="rc-confirm"
          question={t("confirmDelete", { title: recipe.title })}
          deletingText={t("deleting")}
          yes={t("yes")}
          no={t("no")}
          busy={props.busy}
          deleting={props.deleting}
          noButton={noButton}
          onConfirm={props.onConfirm}
          onCancel={props.onCancel}
        />
      )}
    </li>
  );
}

function SaveForm(props: { busy: string | null; onSave: (args: Json) => Promise<boolean>; t: T }) {
  const { t } = props;
  const [title, setTitle] = useState("");
  const [url, setUrl] = useState("");
  const [error, setError] = useState<FormError | null>(null);
  const titleInput = useRef<HTMLInputElement>(null);
  const saving = props.busy === "save";

  async function submit(e: Event) {
    e.preventDefault();
    const checked = saveArgs(title, url);
    if (!checked.ok) {
      setError(checked.error);
      return;
    }
    setError(null);
    if (await props.onSave(checked.args)) {
      setTitle("");
      setUrl("");
      titleInput.current?.focus();
    }
  }

  const errorText = error && t(error, { max: error.startsWith("title") ? MAX_TITLE : MAX_URL });
  return (
    <form class="rc-form card" data-testid="save-form" onSubmit={submit} noValidate aria-labelledby="rc-save-heading">
      <h2 id="rc-save-heading">{t("saveHeading")}</h2>
      <label class="rc-field">
        <span>{t("titleLabel")}</span>
        <input
          ref={titleInput}
          type="text"
          name="title"
          data-testid="title-input"
          required
          maxLength={MAX_TITLE}
          value={title}
          aria-invalid={error === "titleRequired" || error === "titleTooLong"}
          onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
        />
      </label>
      <label class="rc-field">
        <span>{t("linkLabel")}</span>
        <input
          type="url"
          name="source_url"
          data-testid="url-input"
          inputMode="url"
          maxLength={MAX_URL}
          placeholder="https://"
          value={url}
          aria-invalid={error === "urlInvalid" || error === "urlTooLong"}
          onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
        />
      </label>
      <div class="row">
        <button type="submit" class="btn primary" data-testid="save" disabled={props.busy !== null}>
          {saving ? t("saving") : t("save")}
        </button>
        {errorText && (
          <span class="rc-form-error" role="alert" data-testid="form-error">
            {errorText}
          </span>
        )}
      </div>
    </form>
  );
}

/** The recipe links in a result's widget-only `_meta.linksById`. */
function linksOf(meta: Json | null | undefined): Record<string, string> {
  const found = (meta as { linksById?: unknown } | null | undefined)?.linksById;
  const links: Record<string, string> = {};
  if (found && typeof found === "object") {
    for (const [id, url] of Object.entries(found)) if (typeof url === "string") links[id] = url;
  }
  return links;
}

/** A link as a person reads it: its host and path, without the scheme. */
function linkText(url: string): string {
  const parsed = new URL(url);
  const path = parsed.pathname === "/" ? "" : parsed.pathname;
  return `${parsed.host}${path}`;
}
