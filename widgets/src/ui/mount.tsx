// Mounting a widget: one bridge, host context applied to the document (theme, language, safe
// area, max height), and the shared states every widget has (loading, error, signed-out).
import type { ComponentChildren, ComponentType } from "preact";
import { Component, render } from "preact";
import { useEffect } from "preact/hooks";
import { Bridge, BridgeContext, needsSignIn, resultText, useSnapshot } from "../bridge";
import { COMMON, tr } from "./i18n";
import "./styles.css";

export type WidgetStateName = "loading" | "empty" | "error" | "signed-out" | "ready";

/** The host variables set on the document, so that one the host stops sending goes too. */
const applied = new Set<string>();

function HostDocument({ children }: { children: ComponentChildren }) {
  const { context } = useSnapshot();
  useEffect(() => {
    const root = document.documentElement;
    root.dataset.theme = context.theme;
    root.dataset.displayMode = context.displayMode;
    root.lang = context.locale;
    for (const side of ["top", "right", "bottom", "left"] as const) {
      root.style.setProperty(`--safe-${side}`, `${context.safeArea[side]}px`);
    }
    // The host's own look (fonts, colours, radii): styles.css reads these before its defaults.
    for (const name of applied) if (!(name in context.styles)) root.style.removeProperty(name);
    applied.clear();
    for (const [name, value] of Object.entries(context.styles)) {
      root.style.setProperty(name, value);
      applied.add(name);
    }
  }, [context]);
  return <>{children}</>;
}

/** A render error shows the error state (and reaches the server log) instead of a blank frame. */
class Crashed extends Component<{ name: string; bridge: Bridge; children: ComponentChildren }, { error: string | null }> {
  state = { error: null as string | null };

  componentDidCatch(error: unknown) {
    const message = error instanceof Error ? error.message : String(error);
    this.props.bridge.log("widget.error", "error", { phase: "render" }, message);
    this.setState({ error: message });
  }

  render() {
    if (this.state.error === null) return this.props.children;
    const t = tr(COMMON, this.props.bridge.snapshot.context.locale);
    return (
      <main class="w" data-widget={this.props.name} data-state="error">
        <p class="state error" data-testid="error">{t("error")}</p>
      </main>
    );
  }
}

/** Render `App` into #root with a started bridge. */
export function mountWidget(name: string, App: ComponentType, version = "1"): Bridge {
  const bridge = new Bridge({ name, version });
  render(
    <BridgeContext.Provider value={bridge}>
      <HostDocument>
        <Crashed name={name} bridge={bridge}>
          <App />
        </Crashed>
      </HostDocument>
    </BridgeContext.Provider>,
    document.getElementById("root")!,
  );
  void bridge.start();
  return bridge;
}

/**
 * The outer frame of a widget: `data-widget` / `data-state` for tests and styling, a max height
 * when inline, and the shared states. `children` renders only when the state is "ready" or "empty".
 */
export function Frame(props: {
  name: string;
  state: WidgetStateName;
  title?: ComponentChildren;
  actions?: ComponentChildren;
  message?: string;
  /** What a screen reader says once the result is shown (default: the title, when it is text). */
  announce?: string;
  children?: ComponentChildren;
}) {
  const { context } = useSnapshot();
  const t = tr(COMMON, context.locale);
  const style = context.displayMode === "inline" && context.maxHeight ? { maxHeight: `${context.maxHeight}px` } : undefined;
  return (
    <main class="w" data-widget={props.name} data-state={props.state} style={style}>
      <Announce state={props.state} text={announced(props, t("waiting"))} />
      {(props.title || props.actions) && (
        <header class="w-head">
          <h1>{props.title}</h1>
          {props.actions}
        </header>
      )}
      {props.state === "loading" && <p class="state" data-testid="loading">{props.message || t("waiting")}</p>}
      {props.state === "error" && (
        <p class="state error" role="alert" data-testid="error">
          {props.message || t("error")}
        </p>
      )}
      {props.state === "signed-out" && <p class="state" data-testid="signed-out">{props.message || t("signedOut")}</p>}
      {(props.state === "ready" || props.state === "empty") && props.children}
    </main>
  );
}

/** What the live region says in `props.state`: the wait, the person's sign-in message, or what
 * was shown (a failure is said by its own role="alert" paragraph, once). */
function announced(
  props: { state: WidgetStateName; message?: string; title?: ComponentChildren; announce?: string },
  waiting: string,
): string {
  if (props.state === "loading") return props.message || waiting;
  if (props.state === "signed-out") return props.message || "";
  if (props.state === "ready" || props.state === "empty") {
    return props.announce ?? (typeof props.title === "string" ? props.title : "");
  }
  return "";
}

/**
 * A polite live region that is in the page from the first render (a region added with its text
 * is not read by every screen reader), so that the wait and then the result are announced.
 */
function Announce(props: { state: WidgetStateName; text: string }) {
  return (
    <p class="sr" role="status" data-testid="announce" data-announced={props.state}>
      {props.text}
    </p>
  );
}

/** The state implied by the tool result alone (widgets refine "ready" into "empty"). */
export function useResultState(): { state: WidgetStateName; message: string } {
  const { result, cancelled, context } = useSnapshot();
  const t = tr(COMMON, context.locale);
  if (cancelled) return { state: "error", message: t("cancelled") };
  if (!result) return { state: "loading", message: t("waiting") };
  if (needsSignIn(result)) return { state: "signed-out", message: resultText(result) || t("signedOut") };
  if (result.isError) return { state: "error", message: resultText(result) || t("error") };
  return { state: "ready", message: "" };
}
