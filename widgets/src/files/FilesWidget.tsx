// Files: the template of analyze_file, compare_files, list_files and delete_file. A report per kind for an
// analysis, the comparison of several, and the account's library with Download and Delete (confirmed inline).
// Files go both ways BY REFERENCE: downloads ask the host, then list_files, for a fresh link of our file id;
// "Analyze another file" takes a file the host holds (selectFiles/uploadFile) and hands analyze_file the
// host's download URL for it.
import { useEffect, useRef, useState } from "preact/hooks";
import { useBridge, useSnapshot } from "../bridge";
import type { LibraryFile } from "../bridge/types";
import { ConfirmDelete, useConfirmFocus } from "../ui/ConfirmDelete";
import { COMMON, language, tr } from "../ui/i18n";
import { Frame, type WidgetStateName } from "../ui/mount";
import {
  type AnalysisData,
  type ChosenFile,
  type Comparison,
  DownloadError,
  type FileReference,
  LIST_LIMIT_MAX,
  type LibraryEntry,
  type Origin,
  type Outcome,
  type Screen,
  type Step,
  analyzeFileArg,
  formatBytes,
  formatDate,
  formatNumber,
  modelContentOf,
  outcomeOf,
  reduce,
  resolveDownload,
} from "./logic";
import { type T, ColumnChart, KV, Report, hasChart, kindName, sharedScale } from "./Report";
import { TEXT } from "./text";
import "./files.css";

const PAGE = 20;

type Busy =
  | { what: "picking" | "list" | "download" }
  | { what: "analyze"; name?: string }
  | { what: "delete"; fileId: string };

type Notice = { key: "deleted"; name: string } | { key: "deletedUnknown" | "notFound" };

const isShowing = (s: Screen) => s.kind === "analysis" || s.kind === "comparison" || s.kind === "library";

/** A file entrypoint's file and where the host stored it (the widget state's `opened`). */
interface Opened {
  uri: string;
  file: LibraryFile;
}

function openedOf(privateContent: unknown): Opened | null {
  const found = (privateContent as { opened?: Opened } | null | undefined)?.opened;
  return found && typeof found.uri === "string" && typeof found.file?.fileId === "string" ? found : null;
}

export function FilesWidget() {
  const bridge = useBridge();
  const snap = useSnapshot();
  const locale = snap.context.locale;
  const t = tr(TEXT, locale);
  const common = tr(COMMON, locale);

  const [screen, setScreenState] = useState<Screen>({ kind: "loading" });
  const current = useRef(screen);
  const [previous, setPrevious] = useState<Screen | null>(null);
  const [busy, setBusy] = useState<Busy | null>(null);
  const [notice, setNotice] = useState<Notice | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [link, setLink] = useState<{ url: string; name: string } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [limit, setLimit] = useState(PAGE);
  const listCall = useRef(0);
  const writtenState = useRef("");
  const fileInput = useRef<HTMLInputElement>(null);
  // A file a file entrypoint opened, once it is in the host's file store: kept in the widget state,
  // so a re-mount analyses it from there again instead of reading the host's URI a second time.
  const opened = useRef<Opened | null>(openedOf(snap.widgetState?.privateContent));

  function setScreen(next: Screen, fromWidget: boolean) {
    current.current = next;
    setScreenState(next);
    if (!fromWidget || !isShowing(next)) return;
    // The model should know what the user did here (another file analysed, the library opened or changed).
    const privateContent = { view: next.kind, ...(opened.current ? { opened: opened.current } : {}) };
    const state = { modelContent: modelContentOf(next), privateContent };
    const key = JSON.stringify(state);
    if (key === writtenState.current) return;
    writtenState.current = key;
    bridge.setWidgetState(state).catch((err: Error) => bridge.log("files.state_error", "warning", undefined, err.message));
  }

  /** Show a step's screen; remember the screen it replaces so Back returns to it. */
  function show(step: Step, origin: Origin) {
    const before = current.current;
    const fromWidget = origin !== "first";
    const replaces =
      fromWidget &&
      origin !== "delete" &&
      isShowing(before) &&
      step.screen !== before &&
      !(before.kind === "library" && step.screen.kind === "library");
    if (replaces) setPrevious(before);
    setScreen(step.screen, fromWidget);
    if (step.actionError !== undefined) setActionError(step.actionError);
  }

  // The host's result: the first one, or a new one for this mount.
  useEffect(() => {
    if (snap.cancelled) {
      setScreen({ kind: "error", message: common("cancelled") }, false);
      return;
    }
    if (!snap.result) return;
    setPrevious(null);
    const step = reduce({ kind: "loading" }, outcomeOf(snap.result), "first");
    show(step, "first");
    if (step.deleted) setNotice(step.deleted.deleted ? { key: "deletedUnknown" } : { key: "notFound" });
    if (step.open) void openChosen(step.open);
    // Re-mounted after the user went to the library here (where files may have been deleted): back to it.
    const lastView = (snap.widgetState?.privateContent as { view?: string } | undefined)?.view;
    if (step.refresh || (lastView === "library" && step.screen.kind !== "signed-out")) void loadLibrary(PAGE);
  }, [snap.result, snap.cancelled]);

  function startAction(next: Busy) {
    setBusy(next);
    setActionError(null);
    setNotice(null);
    setLink(null);
  }

  /** A failure outside a tool result: above the screen when one is shown, else as the screen. */
  function fail(message: string) {
    if (isShowing(current.current)) setActionError(message);
    else setScreen({ kind: "error", message }, true);
  }

  async function loadLibrary(count = limit) {
    const call = ++listCall.current;
    setBusy((b) => b ?? { what: "list" });
    let outcome: Outcome;
    try {
      outcome = outcomeOf(await bridge.callTool("list_files", { limit: count }));
    } catch (err) {
      outcome = { kind: "error", message: (err as Error).message };
    }
    if (call !== listCall.current) return;
    setBusy((b) => (b?.what === "list" ? null : b));
    setLimit(count);
    if (outcome.kind === "library") bridge.log("files.library", "info", { shown: outcome.files.length, total: outcome.total });
    else bridge.log("files.library_failed", "warning", { outcome: outcome.kind });
    show(reduce(current.current, outcome, "list"), "list");
  }

  function openLibrary() {
    setActionError(null);
    setNotice(null);
    setLink(null);
    void loadLibrary(PAGE);
  }

  async function remove(entry: LibraryEntry) {
    startAction({ what: "delete", fileId: entry.file.id });
    let outcome: Outcome;
    try {
      outcome = outcomeOf(await bridge.callTool("delete_file", { file_id: entry.file.id }));
    } catch (err) {
      outcome = { kind: "error", message: (err as Error).message };
    }
    setBusy(null);
    setConfirming(null);
    const step = reduce(current.current, outcome, "delete");
    show(step, "delete");
    if (step.deleted) {
      bridge.log("files.delete", "info", { file_id: entry.file.id, deleted: step.deleted.deleted });
      setNotice(step.deleted.deleted ? { key: "deleted", name: entry.file.name } : { key: "notFound" });
    } else {
      bridge.log("files.delete_failed", "warning", { file_id: entry.file.id, outcome: outcome.kind });
    }
    if (step.refresh) void loadLibrary(limit);
  }

  async function download(ref: FileReference, name: string) {
    startAction({ what: "download" });
    try {
      const { url, source } = await resolveDownload(
        ref.file_id,
        {
          host: (id) => bridge.fileDownloadUrl(id),
          list: () => bridge.callTool("list_files", { limit: LIST_LIMIT_MAX }),
        },
        ref.download_url,
      );
      bridge.log("files.download", "info", { file_id: ref.file_id, source });
      try {
        await bridge.openLink(url);
      } catch (err) {
        // Some hosts open no links from a widget (or refuse this domain): the user can still follow it.
        bridge.log("files.open_link_failed", "warning", { file_id: ref.file_id }, (err as Error).message);
        setLink({ url, name });
      }
    } catch (err) {
      const reason = err instanceof DownloadError ? err.reason : "failed";
      bridge.log("files.download_failed", "warning", { file_id: ref.file_id, reason });
      setActionError(
        reason === "signIn" ? t("downloadSignIn") : reason === "notFound" ? t("downloadNotFound") : (err as Error).message,
      );
    } finally {
      setBusy(null);
    }
  }

  /** The file input's choice (null when the user closes the dialog), for hosts without a file library. */
  function pick(): Promise<File | null> {
    const input = fileInput.current;
    if (!input) return Promise.resolve(null);
    return new Promise((resolve) => {
      const done = (file: File | null) => {
        input.removeEventListener("change", onChange);
        input.removeEventListener("cancel", onCancel);
        resolve(file);
      };
      const onChange = () => done(input.files?.[0] ?? null);
      const onCancel = () => done(null);
      input.value = "";
      input.addEventListener("change", onChange);
      input.addEventListener("cancel", onCancel);
      input.click();
    });
  }

  async function analyzeAnother() {
    startAction({ what: "picking" });
    let file: LibraryFile | undefined;
    try {
      file = (await bridge.selectFiles(pick))[0];
    } catch (err) {
      setBusy(null);
      bridge.log("files.upload_failed", "warning", undefined, (err as Error).message);
      fail((err as Error).message || common("error"));
      return;
    }
    if (!file) {
      setBusy(null);
      return;
    }
    await analyzeHeld(file);
  }

  /**
   * A file entrypoint's file: its bytes read through the host (`resources/read` on the host's
   * URI), put in the host's file store (`uploadFile`), then analysed like any file the host holds.
   * This relay is this app's design, not the spec's (docs/chatgpt-contract.md, "File entrypoints").
   */
  async function openChosen(chosen: ChosenFile) {
    const held = opened.current;
    if (held?.uri === chosen.resourceUri) {
      await analyzeHeld(held.file); // re-mounted: the host's store has it already
      return;
    }
    startAction({ what: "analyze", name: chosen.name });
    let file: LibraryFile;
    try {
      const { bytes, mimeType } = await bridge.readHostFile(chosen.resourceUri);
      file = await bridge.uploadFile(new File([bytes as BlobPart], chosen.name, { type: mimeType ?? "" }));
    } catch (err) {
      setBusy(null);
      bridge.log("files.open_failed", "warning", undefined, (err as Error).message);
      setScreen({ kind: "error", message: t("openFailed", { name: chosen.name }) }, true);
      return;
    }
    bridge.log("files.open", "info", { mime_type: file.mimeType ?? null });
    opened.current = { uri: chosen.resourceUri, file };
    await analyzeHeld(file);
  }

  async function analyzeHeld(file: LibraryFile) {
    setBusy({ what: "analyze", name: file.fileName });
    bridge.log("files.upload", "info", { mime_type: file.mimeType ?? null });
    let url: string | null;
    try {
      url = await bridge.fileDownloadUrl(file.fileId);
    } catch (err) {
      url = null;
      bridge.log("files.handover_failed", "warning", undefined, (err as Error).message);
    }
    if (!url) {
      setBusy(null);
      bridge.log("files.handover_unsupported", "warning");
      fail(t("noHandover"));
      return;
    }
    let outcome: Outcome;
    try {
      outcome = outcomeOf(await bridge.callTool("analyze_file", { file: analyzeFileArg(file, url) }));
    } catch (err) {
      outcome = { kind: "error", message: (err as Error).message };
    }
    setBusy(null);
    if (outcome.kind === "analysis") {
      const f = outcome.data.file;
      bridge.log("files.analyze", "info", { file_id: f.id, kind: f.kind, size: f.size, warnings: outcome.data.warnings.length });
    } else {
      bridge.log("files.analyze_failed", "warning", { outcome: outcome.kind });
    }
    show(reduce(current.current, outcome, "analyze"), "analyze");
  }

  function back() {
    if (!previous) return;
    setScreen(previous, true);
    setPrevious(null);
    setActionError(null);
    setNotice(null);
    setLink(null);
  }

  // ---- render ---------------------------------------------------------------------------------

  const analyzing = busy?.what === "analyze";
  const analyzeText = busy?.what === "analyze" ? (busy.name ? t("analyzing", { name: busy.name }) : t("analyzingFile")) : "";
  const state: WidgetStateName =
    screen.kind === "library" && screen.files.length === 0
      ? "empty"
      : isShowing(screen)
        ? "ready"
        : analyzing
          ? "loading"
          : screen.kind;
  const message =
    state === "loading" && analyzing
      ? analyzeText
      : screen.kind === "error"
        ? screen.message || t("unreadable")
        : screen.kind === "signed-out"
          ? t("signedOut")
          : screen.kind === "loading"
            ? snap.result
              ? t("loadingLibrary")
              : common("waiting")
            : "";
  const title =
    screen.kind === "comparison" ? t("titleComparison") : screen.kind === "library" || screen.kind === "signed-out" ? t("titleLibrary") : t("titleAnalysis");
  const locked = busy !== null;

  const actions = (
    <div class="row fl-head-actions">
      {previous && (
        <button class="btn" data-testid="back" disabled={locked} onClick={back}>
          ← {common("back")}
        </button>
      )}
      {screen.kind === "library" || screen.kind === "signed-out" ? (
        <button class="btn" data-testid="refresh" disabled={locked} onClick={() => void loadLibrary(screen.kind === "library" ? limit : PAGE)}>
          {t("refresh")}
        </button>
      ) : (
        screen.kind !== "loading" && (
          <button class="btn" data-testid="open-library" disabled={locked} onClick={openLibrary}>
            {t("myFiles")}
          </button>
        )
      )}
      {bridge.canUpload && (
        <button class="btn primary" data-testid="analyze-another" disabled={locked} onClick={() => void analyzeAnother()}>
          {t("analyzeAnother")}
        </button>
      )}
      <input ref={fileInput} type="file" hidden tabIndex={-1} aria-hidden="true" data-testid="file-input" />
    </div>
  );

  const busyText =
    busy === null
      ? ""
      : busy.what === "analyze"
        ? analyzeText
        : busy.what === "picking"
          ? t("picking")
          : busy.what === "download"
            ? t("downloading")
            : busy.what === "delete"
              ? t("deleting")
              : t("loadingLibrary");

  return (
    <Frame name="files" state={state} message={message} title={title} actions={actions}>
      {busyText && (
        <p class="fl-status muted" role="status" data-testid="busy">
          {busyText}
        </p>
      )}
      {notice && (
        <p class="fl-notice" role="status" data-testid="notice">
          {notice.key === "deleted" ? t("deleted", { name: notice.name }) : t(notice.key)}
        </p>
      )}
      {actionError !== null && (
        <p class="fl-alert" role="alert" data-testid="action-error">
          {actionError || common("error")}
        </p>
      )}
      {link && (
        <p class="fl-notice" data-testid="download-fallback">
          {t("openHere")}{" "}
          <a href={link.url} target="_blank" rel="noopener noreferrer" data-testid="download-link">
            {link.name}
          </a>
        </p>
      )}
      {state === "empty" && (
        <p class="state" data-testid="empty">
          {t("emptyLibrary")}
        </p>
      )}
      {screen.kind === "analysis" && <Report data={screen.data} t={t} locale={locale} busy={locked} onDownload={download} />}
      {screen.kind === "comparison" && (
        <ComparisonView files={screen.files} comparison={screen.comparison} t={t} locale={locale} busy={locked} onDownload={download} />
      )}
      {screen.kind === "library" && screen.files.length > 0 && (
        <Library
          files={screen.files}
          total={screen.total}
          t={t}
          locale={locale}
          busy={busy}
          confirming={confirming}
          onAsk={setConfirming}
          onDelete={(e) => void remove(e)}
          onDownload={download}
          onMore={() => void loadLibrary(Math.min(LIST_LIMIT_MAX, limit + PAGE))}
        />
      )}
    </Frame>
  );
}

function Library(props: {
  files: LibraryEntry[];
  total: number;
  t: T;
  locale: string;
  busy: Busy | null;
  confirming: string | null;
  onAsk: (id: string | null) => void;
  onDelete: (entry: LibraryEntry) => void;
  onDownload: (ref: FileReference, name: string) => void;
  onMore: () => void;
}) {
  const { files, total, t, locale } = props;
  const plural = (() => {
    try {
      return new Intl.PluralRules(locale).select(total) === "one";
    } catch {
      return total === 1;
    }
  })();
  const count = t(plural ? "countOne" : "countOther", { n: formatNumber(total, locale) });
  return (
    <section data-testid="library">
      <p class="muted fl-count" data-testid="file-count">
        {count}
        {files.length < total && ` · ${t("showing", { shown: formatNumber(files.length, locale), total: formatNumber(total, locale) })}`}
      </p>
      <ul class="list" data-testid="file-list" aria-label={t("titleLibrary")}>
        {files.map((e) => (
          <FileRow
            key={e.file.id}
            entry={e}
            t={t}
            locale={locale}
            busy={props.busy !== null}
            deleting={props.busy?.what === "delete" && props.busy.fileId === e.file.id}
            confirming={props.confirming === e.file.id}
            onAsk={() => props.onAsk(e.file.id)}
            onCancel={() => props.onAsk(null)}
            onDelete={() => props.onDelete(e)}
            onDownload={() => props.onDownload(e.download, e.file.name)}
          />
        ))}
      </ul>
      {files.length < total && files.length < LIST_LIMIT_MAX && (
        <button class="btn fl-more" data-testid="show-more" disabled={props.busy !== null} onClick={props.onMore}>
          {t("showMore")}
        </button>
      )}
    </section>
  );
}

function FileRow(props: {
  entry: LibraryEntry;
  t: T;
  locale: string;
  busy: boolean;
  deleting: boolean;
  confirming: boolean;
  onAsk: () => void;
  onCancel: () => void;
  onDelete: () => void;
  onDownload: () => void;
}) {
  const { entry, t, locale } = props;
  const f = entry.file;
  const { noButton, deleteButton } = useConfirmFocus(props.confirming);

  return (
    <li class="card fl-file" data-testid="file" data-file-id={f.id} data-kind={f.kind}>
      <h2 class="fl-name" data-testid="file-name">
        {f.name}
      </h2>
      <p class="muted fl-meta" data-testid="file-meta">
        <span data-testid="file-type">{kindName(f.kind, f.mime_type, t)}</span> ·{" "}
        <span data-testid="file-size">{formatBytes(f.size, locale)}</span> ·{" "}
        <time dateTime={f.created_at} data-testid="file-date">
          {formatDate(f.created_at, locale)}
        </time>
      </p>
      {entry.summary && (
        <p class="fl-file-summary" data-testid="file-summary">
          {entry.summary}
        </p>
      )}
      {props.confirming ? (
        <ConfirmDelete
          class="fl-confirm"
          question={t("confirmDelete", { name: f.name })}
          deletingText={t("deleting")}
          yes={t("yes")}
          no={t("no")}
          busy={props.busy}
          deleting={props.deleting}
          noButton={noButton}
          onConfirm={props.onDelete}
          onCancel={props.onCancel}
        />
      ) : (
        <div class="row">
          <button class="btn" data-testid="download" aria-label={t("downloadLabel", { name: f.name })} disabled={props.busy} onClick={props.onDownload}>
            {t("download")}
          </button>
          <button
            ref={deleteButton}
            class="btn danger"
            data-testid="delete"
            aria-label={t("deleteLabel", { name: f.name })}
            disabled={props.busy}
            onClick={props.onAsk}
          >
            {t("delete")}
          </button>
        </div>
      )}
    </li>
  );
}

const MAX_SIDE_BY_SIDE = 8;

/**
 * The tables' shared columns one under the other, each drawn once per file side by side (the
 * frame scrolls sideways past three): where two exports of the same data drifted shows at once.
 */
function SideBySide(props: { files: AnalysisData[]; columns: string[]; t: T; locale: string }) {
  const { t, locale } = props;
  const tables = props.files.filter((d) => d.file.kind === "csv" && d.analysis);
  const columnsOf = tables.map((d) => {
    const cols = Array.isArray(d.analysis?.details.columns) ? d.analysis.details.columns : [];
    const byName = new Map<string, Record<string, unknown>>();
    for (const col of cols as Record<string, unknown>[]) {
      if (col && typeof col.name === "string") byName.set(col.name, col);
    }
    return byName;
  });
  const drawable = props.columns.filter((name) =>
    columnsOf.some((cols) => cols.has(name) && hasChart(cols.get(name)!)));
  const shown = drawable.slice(0, MAX_SIDE_BY_SIDE);
  if (tables.length < 2 || !shown.length) return null;
  const grid = { gridTemplateColumns: `repeat(${tables.length}, minmax(180px, 1fr))` };
  return (
    <>
      <h3>{t("sideBySide")}</h3>
      <div class="fl-scroll" tabIndex={0} role="region" aria-label={t("sideBySide")}>
        {shown.map((name, row) => {
          // One axis for the row: the files' histograms are read against each other.
          const scale = sharedScale(columnsOf.map((cols) => cols.get(name) ?? {}));
          return (
            <section class="fl-side" data-testid="side-column" data-column={name} key={name}>
              <h4>
                <code>{name}</code>
              </h4>
              <div class="fl-side-row" style={grid}>
                {tables.map((d, i) => {
                  const col = columnsOf[i]!.get(name);
                  return (
                    <div data-testid="side-cell" data-file-id={d.file.id} key={d.file.id}>
                      {col && hasChart(col) ? (
                        <ColumnChart
                          column={col}
                          name={`${name} (${d.file.name})`}
                          caption={d.file.name}
                          uid={`side${row}-${i}-`}
                          scale={scale ?? undefined}
                          t={t}
                          locale={locale}
                        />
                      ) : (
                        <p class="muted fl-small">
                          {d.file.name}: {t("sideAbsent")}
                        </p>
                      )}
                    </div>
                  );
                })}
              </div>
            </section>
          );
        })}
      </div>
      {drawable.length > shown.length && (
        <p class="muted" data-testid="side-shown">
          {t("sideShown", {
            shown: formatNumber(shown.length, locale),
            total: formatNumber(drawable.length, locale),
          })}
        </p>
      )}
    </>
  );
}

function ComparisonView(props: {
  files: AnalysisData[];
  comparison: Comparison;
  t: T;
  locale: string;
  busy: boolean;
  onDownload: (ref: FileReference, name: string) => void;
}) {
  const { files, comparison: c, t, locale } = props;
  const labels = Object.keys(c.rows).length ? Object.keys(c.rows) : Object.keys(c.only_in);
  const tabular = labels.length >= 2;
  const onlyIn = Object.entries(c.only_in).filter(([, cols]) => cols.length > 0);
  return (
    <section data-testid="comparison">
      {/* The server's sentence for the model, in English: the table below says it in every
          language. */}
      {c.summary && language(locale) === "en" && (
        <p class="fl-summary" data-testid="comparison-summary">
          {c.summary}
        </p>
      )}
      <div class="fl-scroll" tabIndex={0} role="region" aria-label={t("files")}>
        <table class="t" data-testid="comparison-files">
          <thead>
            <tr>
              <th scope="col">{t("name")}</th>
              <th scope="col">{t("type")}</th>
              <th scope="col" class="num">{t("size")}</th>
              <th scope="col" class="num">{t("rows")}</th>
            </tr>
          </thead>
          <tbody>
            {files.map((d) => {
              const rows = d.analysis?.details.rows ?? c.rows[d.file.name];
              return (
                <tr key={d.file.id} data-file-id={d.file.id}>
                  <th scope="row">{d.file.name}</th>
                  <td>{kindName(d.file.kind, d.file.mime_type, t)}</td>
                  <td class="num">{formatBytes(d.file.size, locale)}</td>
                  <td class="num">{d.file.kind === "csv" && typeof rows === "number" ? formatNumber(rows, locale) : "—"}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {tabular && (
        <>
          <h3>{t("sharedColumns")}</h3>
          {c.shared_columns.length ? (
            <ul class="fl-chips" data-testid="shared-columns">
              {c.shared_columns.map((name) => (
                <li class="fl-chip">
                  <code>{name}</code>
                </li>
              ))}
            </ul>
          ) : (
            <p class="muted" data-testid="shared-columns">
              {t("noShared")}
            </p>
          )}
          {onlyIn.length > 0 && (
            <KV
              testid="only-in"
              rows={onlyIn.map(([label, cols]) => [
                t("onlyIn", { name: label }),
                <ul class="fl-chips">
                  {cols.map((col) => (
                    <li class="fl-chip">
                      <code>{col}</code>
                    </li>
                  ))}
                </ul>,
              ])}
            />
          )}
          {c.type_conflicts.length > 0 && (
            <>
              <h3>{t("typeConflicts")}</h3>
              <div class="fl-scroll" tabIndex={0} role="region" aria-label={t("typeConflicts")}>
                <table class="t" data-testid="type-conflicts">
                  <thead>
                    <tr>
                      <th scope="col">{t("colName")}</th>
                      {labels.map((l) => (
                        <th scope="col">{l}</th>
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {c.type_conflicts.map((x) => (
                      <tr data-column={x.column}>
                        <th scope="row">
                          <code>{x.column}</code>
                        </th>
                        {labels.map((l) => (
                          <td>
                            <code>{x.types[l] ?? "—"}</code>
                          </td>
                        ))}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
        </>
      )}
      {tabular && <SideBySide files={files} columns={c.shared_columns} t={t} locale={locale} />}
      {files.map((d, i) => (
        <details class="card fl-details" data-testid="comparison-file" data-file-id={d.file.id} key={d.file.id}>
          <summary>{t("reportFor", { name: d.file.name })}</summary>
          <Report
            data={d}
            uid={`r${i}-`}
            t={t}
            locale={locale}
            busy={props.busy}
            onDownload={props.onDownload}
          />
        </details>
      ))}
    </section>
  );
}
