// One file's analysis: the facts of structuredContent, the summary and warnings, and a view per kind of the
// hidden `_meta.analysis.details` (app/features/files/analysis/: tabular, plaintext, structured, images, pdfs, binary).
import { type ComponentChildren, Fragment } from "preact";
import { useEffect, useRef } from "preact/hooks";
import type { Json } from "../bridge/types";
import { language, type tr } from "../ui/i18n";
import {
  type AnalysisData,
  type FileReference,
  delimiterKey,
  excerpt,
  formatBytes,
  formatDate,
  formatNumber,
  hexPairs,
  kindLabel,
  pdfDate,
} from "./logic";
import type { FilesKey } from "./text";

export type T = ReturnType<typeof tr<FilesKey>>;

export interface ReportProps {
  data: AnalysisData;
  /** Makes the ids inside unique where several reports share a frame (their place there). */
  uid?: string;
  t: T;
  locale: string;
  busy: boolean;
  onDownload: (ref: FileReference, name: string) => void;
}

type Row = [label: string, value: ComponentChildren];

/** A definition list of the rows that have a value. */
export function KV(props: { rows: Row[]; testid?: string }) {
  const rows = props.rows.filter(([, v]) => v !== null && v !== undefined && v !== "" && v !== false);
  if (!rows.length) return null;
  return (
    <dl class="kv" data-testid={props.testid}>
      {rows.map(([label, value]) => (
        <Fragment key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const obj = (v: unknown): Json => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Json) : {});

export function kindName(kind: string, mime: string, t: T): string {
  if (kind === "text") return t("kindText");
  if (kind === "image") return t("kindImage");
  if (kind === "binary") return t("kindBinary");
  return kindLabel(kind, mime);
}

function yesNo(v: unknown, t: T): string | null {
  return v === true ? t("yes") : v === false ? t("no") : null;
}

/** "object ×3 · array ×1": counts by name, largest first as the analysis orders them. */
function Counts(props: { counts: Json; locale: string; testid?: string }) {
  const entries = Object.entries(props.counts).filter(([, n]) => typeof n === "number");
  if (!entries.length) return null;
  return (
    <ul class="fl-chips" data-testid={props.testid}>
      {entries.map(([name, n]) => (
        <li class="fl-chip" key={name}>
          <code>{name}</code> <span class="muted">×{formatNumber(n, props.locale)}</span>
        </li>
      ))}
    </ul>
  );
}

export function Report(props: ReportProps) {
  const { data, t, locale } = props;
  const f = data.file;
  const warnings = data.analysis?.warnings.length ? data.analysis.warnings : data.warnings;
  const mime = f.mime_type || data.analysis?.mime_type || "";
  const typeText = `${kindName(f.kind, mime, t)} · ${mime}`;
  return (
    <article class="fl-report" data-testid="report" data-kind={f.kind} data-file-id={f.id}>
      <h2 class="fl-name" data-testid="file-name">
        {f.name}
      </h2>
      <KV
        testid="file-facts"
        rows={[
          [
            t("type"),
            <>
              {typeText}
              {f.claimed_mime_type && f.claimed_mime_type !== mime && (
                <span class="muted"> ({t("claimed", { type: f.claimed_mime_type })})</span>
              )}
            </>,
          ],
          [t("size"), formatBytes(f.size, locale)],
          [t("added"), formatDate(f.created_at, locale)],
          [t("kept"), f.saved ? t("inLibrary") : f.expires_at ? t("notKept", { date: formatDate(f.expires_at, locale) }) : null],
        ]}
      />
      {/* The summary is the server's sentence for the model, in English; in another language the
          facts above and the details below say the same in the person's words. */}
      {data.summary && language(locale) === "en" && (
        <p class="fl-summary" data-testid="summary">
          {data.summary}
        </p>
      )}
      {warnings.length > 0 && (
        <section class="fl-warnings" aria-label={t("warnings")}>
          <h3>{t("warnings")}</h3>
          <ul data-testid="warnings">
            {warnings.map((w) => (
              <li data-testid="warning">{w}</li>
            ))}
          </ul>
        </section>
      )}
      {data.analysis ? (
        <KindDetails
          kind={data.analysis.kind || f.kind}
          details={data.analysis.details}
          sha256={f.sha256}
          uid={props.uid ?? `${f.id}-`}
          t={t}
          locale={locale}
        />
      ) : (
        <p class="muted" data-testid="no-details">
          {t("noDetails")}
        </p>
      )}
      <div class="row fl-actions">
        <button
          class="btn"
          data-testid="download-report"
          disabled={props.busy}
          onClick={() => props.onDownload(data.report, data.report.file_name)}
        >
          {t("downloadReport")}
        </button>
      </div>
    </article>
  );
}

export function KindDetails(props: {
  kind: string;
  details: Json;
  sha256?: string;
  uid?: string; // makes the ids of its parts unique where several reports share a frame
  t: T;
  locale: string;
}) {
  switch (props.kind) {
    case "csv":
      return <CsvDetails {...props} />;
    case "text":
      return <TextDetails {...props} />;
    case "json":
      return <JsonDetails {...props} />;
    case "jsonl":
      return <JsonlDetails {...props} />;
    case "image":
      return <ImageDetails {...props} />;
    case "pdf":
      return <PdfDetails {...props} />;
    default:
      return <BinaryDetails {...props} />;
  }
}

type DetailProps = { details: Json; sha256?: string; uid?: string; t: T; locale: string };

function CsvDetails({ details: d, uid, t, locale }: DetailProps) {
  const n = (v: unknown) => (num(v) === null ? null : formatNumber(v, locale));
  const sep = delimiterKey(d.delimiter);
  const columns = list(d.columns).map(obj);
  const width = num(d.column_count) ?? columns.length;
  return (
    <section data-testid="report-csv">
      <KV
        rows={[
          [t("rows"), n(d.rows)],
          [t("columns"), n(d.column_count)],
          [t("separator"), sep ? t(sep) : str(d.delimiter) && <code>{JSON.stringify(d.delimiter)}</code>],
          [t("headerRow"), yesNo(d.has_header, t)],
          [t("encoding"), str(d.encoding)],
          [t("raggedRows"), num(d.ragged_rows) ? n(d.ragged_rows) : null],
        ]}
      />
      {columns.length > 0 && (
        <div class="fl-scroll" tabIndex={0} role="region" aria-label={t("columns")}>
          <table class="t" data-testid="csv-columns">
            <thead>
              <tr>
                <th scope="col">{t("colName")}</th>
                <th scope="col">{t("colType")}</th>
                <th scope="col" class="num">{t("colNonEmpty")}</th>
                <th scope="col" class="num">{t("colDistinct")}</th>
                <th scope="col" class="num">{t("colMin")}</th>
                <th scope="col" class="num">{t("colMax")}</th>
                <th scope="col" class="num">{t("colMean")}</th>
                <th scope="col">{t("colTop")}</th>
              </tr>
            </thead>
            <tbody>
              {columns.map((c, i) => (
                <tr key={`${i}`} data-testid="csv-column" data-column={str(c.name) ?? ""}>
                  <th scope="row">{str(c.name)}</th>
                  <td>
                    <code>{str(c.type)}</code>
                    {num(c.min_length) !== null && (
                      <div class="muted fl-small">
                        {t("lengthRange", { min: formatNumber(c.min_length, locale), max: formatNumber(c.max_length, locale) })}
                      </div>
                    )}
                  </td>
                  <td class="num">
                    {n(c.non_empty)}
                    {num(c.empty) ? (
                      <div class="muted fl-small" data-testid="csv-empty">
                        {t("emptyCells", { n: formatNumber(c.empty, locale) })}
                      </div>
                    ) : null}
                  </td>
                  <td class="num">{c.distinct_capped ? t("atLeast", { n: formatNumber(c.distinct, locale) }) : n(c.distinct)}</td>
                  <td class="num">{bound(c.min, locale)}</td>
                  <td class="num">{bound(c.max, locale)}</td>
                  <td class="num">{n(c.mean)}</td>
                  <td>
                    <TopValues values={list(c.top_values).map(obj)} approximate={c.top_values_approximate === true} t={t} locale={locale} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {width > columns.length && columns.length > 0 && (
        <p class="muted">{t("columnsShown", { shown: formatNumber(columns.length, locale), total: formatNumber(width, locale) })}</p>
      )}
      <Charts columns={columns} uid={uid} t={t} locale={locale} />
    </section>
  );
}

const MAX_CHARTS = 12;

/** A chart per column that has one: numbers as a histogram, text as bars of its top values. */
function Charts(props: { columns: Json[]; uid?: string; t: T; locale: string }) {
  const { t, locale } = props;
  const charted = props.columns.filter(hasChart).slice(0, MAX_CHARTS);
  if (!charted.length) return null;
  return (
    <>
      <h3>{t("distributions")}</h3>
      <div class="fl-charts">
        {charted.map((c, i) => (
          <ColumnChart
            key={`${i}`}
            column={c}
            uid={`${props.uid ?? ""}c${i}-`}
            t={t}
            locale={locale}
          />
        ))}
      </div>
    </>
  );
}

/** Whether a column has a chart: a histogram, a timeline, or more than one top value. */
export function hasChart(c: Json): boolean {
  return obj(c.histogram).counts !== undefined || obj(c.timeline).counts !== undefined ||
    list(c.top_values).length > 1;
}

/**
 * A column's chart: numbers as a histogram, dates as a line over time, text as bars of its top
 * values. `name` is what the text alternative calls it, `caption` what the figure shows (its
 * name by default), `uid` keeps the text's id unique where a column is drawn twice.
 */
export function ColumnChart(props: {
  column: Json;
  t: T;
  locale: string;
  name?: string;
  caption?: string;
  uid?: string;
  scale?: Scale;
}) {
  const { column: c, t, locale } = props;
  const name = props.name ?? str(c.name) ?? "";
  const column = str(c.name) ?? "";
  const common = { name, column, caption: props.caption, uid: props.uid, t, locale };
  if (obj(c.histogram).counts !== undefined) {
    return <Histogram bins={obj(c.histogram)} scale={props.scale} {...common} />;
  }
  if (obj(c.timeline).counts !== undefined) return <Timeline line={obj(c.timeline)} {...common} />;
  const top = list(c.top_values).map(obj);
  if (top.length > 1) return <Bars values={top} {...common} />;
  return null;
}

/** A histogram's axes shared with others (the comparison): the range drawn, the tallest share. */
export type Scale = { min: number; max: number; peak: number };

/** The scale that holds every one of these columns' histograms, or null when none has one. */
export function sharedScale(columns: Json[]): Scale | null {
  let min = Infinity;
  let max = -Infinity;
  let peak = 0;
  for (const c of columns) {
    const counts = list(obj(c.histogram).counts).map((v) => num(v) ?? 0);
    const edges = list(obj(c.histogram).edges).map((v) => num(v) ?? 0);
    if (!counts.length || edges.length !== counts.length + 1) continue;
    const total = counts.reduce((a, b) => a + b, 0) || 1;
    min = Math.min(min, edges[0]!);
    max = Math.max(max, edges[edges.length - 1]!);
    peak = Math.max(peak, Math.max(...counts) / total);
  }
  return Number.isFinite(min) && max > min ? { min, max, peak: peak || 1 } : null;
}

type ChartProps = {
  name: string;
  column: string;
  caption?: string;
  uid?: string;
  t: T;
  locale: string;
};

// Unique by position (uid: the report's and the column's place), not by the column's name: names
// that differ only outside [A-Za-z0-9_-] (价格 and 数量, "a b" and "a.b") would meet.
const chartId = (kind: string, props: ChartProps) =>
  `${kind}-${props.uid ?? props.name}`.replace(/[^A-Za-z0-9_-]/g, "_");

const CHART_W = 240;
const CHART_H = 64;

function Histogram(props: ChartProps & { bins: Json; scale?: Scale }) {
  const counts = list(props.bins.counts).map((v) => num(v) ?? 0);
  const edges = list(props.bins.edges).map((v) => num(v) ?? 0);
  if (!counts.length || edges.length !== counts.length + 1) return null;
  const total = counts.reduce((a, b) => a + b, 0) || 1;
  const peak = counts.indexOf(Math.max(...counts));
  const f = (v: number) => formatNumber(v, props.locale, 3);
  // Alone, its own range and tallest bin; beside others, the range and share they all fit in.
  const scale = props.scale ?? { min: edges[0]!, max: edges[edges.length - 1]!, peak: 0 };
  const span = scale.max - scale.min || 1;
  const x = (v: number) => (CHART_W * (v - scale.min)) / span;
  const top = props.scale ? scale.peak * total : Math.max(...counts) || 1;
  const said = props.t("histogramAlt", {
    name: props.name,
    min: f(edges[0]!),
    max: f(edges[edges.length - 1]!),
    bins: String(counts.length),
    from: f(edges[peak]!),
    to: f(edges[peak + 1]!),
    share: `${Math.round((100 * counts[peak]!) / total)}%`,
  });
  return (
    <SvgChart
      kind="histogram"
      chart={props}
      axis={[f(scale.min), f(scale.max)]}
      said={said}
      sampled={props.bins.sampled === true}
    >
      {counts.map((n, i) => {
        const h = n ? Math.max(1, (CHART_H * n) / top) : 0;
        const left = x(edges[i]!);
        const width = Math.max(1, x(edges[i + 1]!) - left - 2);
        const y = CHART_H - h;
        return <rect data-testid="chart-mark" x={left + 1} y={y} width={width} height={h} />;
      })}
    </SvgChart>
  );
}

/** A date column over time: how many rows fall in each of its periods, as a line. */
function Timeline(props: ChartProps & { line: Json }) {
  const counts = list(props.line.counts).map((v) => num(v) ?? 0);
  const edges = list(props.line.edges).map((v) => str(v) ?? "");
  if (!counts.length || edges.length !== counts.length + 1) return null;
  const top = Math.max(...counts) || 1;
  const step = CHART_W / (counts.length - 1 || 1);
  const points = counts.map((n, i) => `${(i * step).toFixed(1)},${(CHART_H - 2 - ((CHART_H - 4) * n) / top).toFixed(1)}`);
  const peak = counts.indexOf(Math.max(...counts));
  const said = props.t("timelineAlt", {
    name: props.name,
    first: edges[0]!,
    last: edges[edges.length - 1]!,
    from: edges[peak]!,
    to: edges[peak + 1]!,
    n: formatNumber(counts[peak], props.locale),
  });
  return (
    <SvgChart
      kind="timeline"
      chart={props}
      axis={[edges[0]!, edges[edges.length - 1]!]}
      said={said}
      sampled={props.line.sampled === true}
    >
      <polygon points={`0,${CHART_H} ${points.join(" ")} ${CHART_W},${CHART_H}`} class="fl-area" />
      <polyline data-testid="chart-mark" points={points.join(" ")} fill="none" class="fl-line" />
    </SvgChart>
  );
}

/** The frame of a drawn chart: its caption, the SVG labelled by the sentence below it, the axis'
 * two ends. */
function SvgChart(props: {
  kind: string;
  chart: ChartProps;
  axis: [string, string];
  said: string;
  sampled: boolean;
  children: ComponentChildren;
}) {
  const { chart } = props;
  const id = chartId(props.kind === "histogram" ? "hist" : "line", chart);
  return (
    <figure
      class="fl-chart"
      data-testid="csv-chart"
      data-kind={props.kind}
      data-column={chart.column}
    >
      <figcaption class="fl-chart-name">{chart.caption ?? chart.name}</figcaption>
      <svg viewBox={`0 0 ${CHART_W} ${CHART_H}`} role="img" aria-labelledby={id} preserveAspectRatio="none">
        {props.children}
      </svg>
      <div class="fl-chart-axis muted">
        <span>{props.axis[0]}</span>
        <span>{props.axis[1]}</span>
      </div>
      <p id={id} class="muted fl-small" data-testid="chart-text">
        {props.said}
        {props.sampled ? ` ${chart.t("sampledNote")}` : ""}
      </p>
    </figure>
  );
}

function Bars(props: ChartProps & { values: Json[] }) {
  const top = Math.max(...props.values.map((v) => num(v.count) ?? 0)) || 1;
  return (
    <figure
      class="fl-chart"
      data-testid="csv-chart"
      data-kind="bars"
      data-column={props.column}
    >
      <figcaption class="fl-chart-name">{props.caption ?? props.name}</figcaption>
      <ul class="fl-bars" aria-label={props.t("barsLabel", { name: props.name })}>
        {props.values.map((v) => (
          <li>
            <span class="fl-bar-label ellipsis">{String(v.value ?? "")}</span>
            <span class="fl-bar" data-testid="chart-mark" style={{ width: `${(100 * (num(v.count) ?? 0)) / top}%` }} />
            <span class="muted fl-small">{formatNumber(v.count, props.locale)}</span>
          </li>
        ))}
      </ul>
    </figure>
  );
}

function bound(v: unknown, locale: string): string {
  if (typeof v === "number") return formatNumber(v, locale);
  return typeof v === "string" ? v : "";
}

function TopValues(props: { values: Json[]; approximate: boolean; t: T; locale: string }) {
  if (!props.values.length) return null;
  return (
    <ul class="fl-top" title={props.approximate ? props.t("approximate") : undefined}>
      {props.values.map((v) => (
        <li>
          <span class="fl-value">{String(v.value ?? "")}</span>{" "}
          <span class="muted">
            {props.approximate ? "≈" : "×"}
            {formatNumber(v.count, props.locale)}
          </span>
        </li>
      ))}
    </ul>
  );
}

function TextDetails({ details: d, t, locale }: DetailProps) {
  const n = (v: unknown) => (num(v) === null ? null : formatNumber(v, locale));
  const terms = list(d.top_terms).map(obj);
  return (
    <section data-testid="report-text">
      <KV
        rows={[
          [t("lines"), n(d.lines)],
          [t("words"), n(d.words)],
          [t("characters"), n(d.characters)],
          [t("longestLine"), n(d.longest_line)],
          [t("encoding"), str(d.encoding)],
          [t("invalidBytes"), num(d.invalid_bytes) ? n(d.invalid_bytes) : null],
        ]}
      />
      {terms.length > 0 && (
        <>
          <h3>
            {t("topTerms")}
            {d.top_terms_approximate === true && <span class="muted fl-small"> ({t("approximate")})</span>}
          </h3>
          <ul class="fl-chips" data-testid="top-terms">
            {terms.map((term) => (
              <li class="fl-chip">
                {String(term.term ?? "")} <span class="muted">×{formatNumber(term.count, locale)}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function KeyTable(props: { keys: Json[]; withCount: boolean; truncated: boolean; t: T; locale: string; testid: string }) {
  const { t } = props;
  if (!props.keys.length) return null;
  return (
    <>
      <div class="fl-scroll" tabIndex={0} role="region" aria-label={t("keyCount")}>
        <table class="t" data-testid={props.testid}>
          <thead>
            <tr>
              <th scope="col">{t("key")}</th>
              {props.withCount && <th scope="col" class="num">{t("count")}</th>}
              <th scope="col">{t("types")}</th>
            </tr>
          </thead>
          <tbody>
            {props.keys.map((k) => (
              <tr>
                <th scope="row">
                  <code>{String(k.key ?? "")}</code>
                </th>
                {props.withCount && <td class="num">{formatNumber(k.count, props.locale)}</td>}
                <td>
                  {typeof k.type === "string" ? (
                    <code>{k.type}</code>
                  ) : (
                    Object.entries(obj(k.types)).map(([name, n], i) => (
                      <span>
                        {i > 0 && ", "}
                        <code>{name}</code> <span class="muted">×{formatNumber(n, props.locale)}</span>
                      </span>
                    ))
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {props.truncated && <p class="muted fl-small">{t("shortened")}</p>}
    </>
  );
}

function JsonDetails({ details: d, t, locale }: DetailProps) {
  const n = (v: unknown) => (num(v) === null ? null : formatNumber(v, locale));
  const isObject = d.top_level_type === "object";
  return (
    <section data-testid="report-json">
      <KV
        rows={[
          [t("validJson"), yesNo(d.valid, t)],
          [t("parseError"), str(d.error)],
          [t("topLevel"), str(d.top_level_type) && <code>{str(d.top_level_type)}</code>],
          [isObject ? t("keyCount") : t("length"), isObject ? n(d.key_count) : n(d.length)],
          [t("depth"), n(d.depth)],
          [t("encoding"), str(d.encoding)],
        ]}
      />
      {Object.keys(obj(d.counts)).length > 0 && (
        <>
          <h3>{t("values")}</h3>
          <Counts counts={obj(d.counts)} locale={locale} testid="json-counts" />
        </>
      )}
      {isObject ? (
        <KeyTable keys={list(d.keys).map(obj)} withCount={false} truncated={d.keys_truncated === true} t={t} locale={locale} testid="json-keys" />
      ) : (
        <>
          {Object.keys(obj(d.element_types)).length > 0 && (
            <>
              <h3>{t("elementTypes")}</h3>
              <Counts counts={obj(d.element_types)} locale={locale} testid="json-element-types" />
            </>
          )}
          {list(d.element_keys).length > 0 && <h3>{t("elementKeys")}</h3>}
          <KeyTable
            keys={list(d.element_keys).map(obj)}
            withCount
            truncated={d.element_keys_truncated === true}
            t={t}
            locale={locale}
            testid="json-keys"
          />
        </>
      )}
    </section>
  );
}

function JsonlDetails({ details: d, t, locale }: DetailProps) {
  const n = (v: unknown) => (num(v) === null ? null : formatNumber(v, locale));
  const bad = list(d.invalid_line_numbers).filter((x) => typeof x === "number") as number[];
  const invalid = num(d.invalid_lines) ?? 0;
  return (
    <section data-testid="report-jsonl">
      <KV
        rows={[
          [t("records"), n(d.records)],
          [
            t("invalidLines"),
            invalid
              ? `${formatNumber(invalid, locale)}${bad.length ? ` (${bad.map((x) => formatNumber(x, locale)).join(", ")}${invalid > bad.length ? ", …" : ""})` : ""}`
              : null,
          ],
          [t("blankLines"), num(d.blank_lines) ? n(d.blank_lines) : null],
          [t("encoding"), str(d.encoding)],
        ]}
      />
      {Object.keys(obj(d.record_types)).length > 0 && (
        <>
          <h3>{t("recordTypes")}</h3>
          <Counts counts={obj(d.record_types)} locale={locale} testid="jsonl-record-types" />
        </>
      )}
      {list(d.keys).length > 0 && <h3>{t("keyCount")}</h3>}
      <KeyTable keys={list(d.keys).map(obj)} withCount truncated={d.keys_truncated === true} t={t} locale={locale} testid="jsonl-keys" />
    </section>
  );
}

function ImageDetails({ details: d, t, locale }: DetailProps) {
  const w = num(d.width);
  const h = num(d.height);
  const dpi = list(d.dpi);
  return (
    <section data-testid="report-image">
      <Preview preview={obj(d.preview)} label={t("imagePreview")} />
      <KV
        rows={[
          [t("format"), str(d.format)],
          [t("dimensions"), w !== null && h !== null ? t("pixels", { w: formatNumber(w, locale), h: formatNumber(h, locale) }) : null],
          [t("mode"), str(d.mode) && <code>{str(d.mode)}</code>],
          [t("alpha"), yesNo(d.has_alpha, t)],
          [t("frames"), num(d.frames) === null ? null : formatNumber(d.frames, locale)],
          [t("resolution"), dpi.length === 2 ? t("dpi", { x: formatNumber(dpi[0], locale), y: formatNumber(dpi[1], locale) }) : null],
          [t("decoded"), yesNo(d.decoded, t)],
        ]}
      />
    </section>
  );
}

/** The analysis's small preview (RGB bytes, at most 24 a side) painted on a canvas and shown
 *  larger: a thumbnail without loading an image, which a widget's CSP may refuse. */
function Preview(props: { preview: Json; label: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const w = num(props.preview.width);
  const h = num(props.preview.height);
  const rgb = str(props.preview.rgb);
  useEffect(() => {
    const context = canvas.current?.getContext("2d");
    if (!context || !w || !h || !rgb) return;
    const raw = atob(rgb);
    if (raw.length !== w * h * 3) return;
    const pixels = context.createImageData(w, h);
    for (let i = 0, j = 0; i < raw.length; i += 3, j += 4) {
      pixels.data[j] = raw.charCodeAt(i);
      pixels.data[j + 1] = raw.charCodeAt(i + 1);
      pixels.data[j + 2] = raw.charCodeAt(i + 2);
      pixels.data[j + 3] = 255;
    }
    context.putImageData(pixels, 0, 0);
  }, [w, h, rgb]);
  if (!w || !h || !rgb) return null;
  return (
    <canvas
      ref={canvas}
      class="fl-preview"
      width={w}
      height={h}
      role="img"
      aria-label={props.label}
      data-testid="image-preview"
      style={{ aspectRatio: `${w} / ${h}` }}
    />
  );
}

const PDF_META = ["title", "author", "subject", "creator", "producer"] as const;

function PdfDetails({ details: d, t, locale }: DetailProps) {
  const meta = obj(d.metadata);
  const texts = list(d.first_pages_text).map((x) => (typeof x === "string" ? x : ""));
  // The first page, or the first page that has text when the first has none.
  const index = texts[0]?.trim() ? 0 : texts.findIndex((x) => x.trim());
  const created = str(meta.creation_date);
  const createdDate = created ? pdfDate(created) : null;
  return (
    <section data-testid="report-pdf">
      <KV
        rows={[
          [t("pages"), num(d.pages) === null ? null : formatNumber(d.pages, locale)],
          [t("pageObjects"), num(d.page_objects_found) === null ? null : formatNumber(d.page_objects_found, locale)],
          [t("encrypted"), d.encrypted === null ? t("unknown") : yesNo(d.encrypted, t)],
        ]}
      />
      <KV
        testid="pdf-metadata"
        rows={[
          ...PDF_META.map((k): Row => [t(k), str(meta[k])]),
          [t("created"), createdDate ? formatDate(createdDate, locale) : created],
        ]}
      />
      {index >= 0 ? (
        <figure class="fl-excerpt">
          <figcaption class="muted">{t("pageText", { n: formatNumber(index + 1, locale) })}</figcaption>
          <blockquote data-testid="pdf-text">{excerpt(texts[index], 800)}</blockquote>
        </figure>
      ) : (
        texts.length > 0 && (
          <p class="muted" data-testid="pdf-no-text">
            {t("noText")}
          </p>
        )
      )}
    </section>
  );
}

function BinaryDetails({ details: d, sha256, t }: DetailProps) {
  const hash = str(d.sha256) ?? sha256 ?? null;
  const head = str(d.first_bytes_hex);
  return (
    <section data-testid="report-binary">
      <KV
        rows={[
          [t("typeGuess"), str(d.type_guess)],
          [t("sha256"), hash && <code class="fl-hash" data-testid="sha256">{hash}</code>],
          [t("firstBytes"), head && <code>{hexPairs(head)}</code>],
        ]}
      />
    </section>
  );
}
