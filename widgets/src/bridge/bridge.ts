// One bridge per widget: the MCP Apps standard first (ui/initialize, then tool input/result and
// host context as notifications, tools/call and ui/* requests over postMessage), ChatGPT's
// window.openai where it offers more (widget state, files, modals, openExternal).
//
// Why not ext-apps' `App`: it pulls the MCP SDK's protocol layer and zod (84 KB gzipped for an
// empty view), which alone breaks the 60 KB budget. This speaks the same wire protocol; the host
// emulator drives it with ext-apps' own `AppBridge`, so the two are checked against each other.

import type {
  DisplayMode,
  HostContext,
  Insets,
  Json,
  JsonRpcMessage,
  LibraryFile,
  OpenAiGlobals,
  ToolResult,
  WidgetState,
} from "./types";

export const PROTOCOL_VERSION = "2026-01-26";
export const LOG_TOOL = "log_widget_event";
const WIDGET_SESSION_KEY = "openai/widgetSessionId";
const WWW_AUTHENTICATE = "mcp/www_authenticate";
// The server rate-limits too; this keeps a widget in an error loop from flooding it.
const LOG_BURST = 30;
const LOG_WINDOW_MS = 60_000;
// The largest file the widget reads from the host (the server's own limit is lower by default).
const MAX_HOST_FILE_BYTES = 100_000_000;

export interface Snapshot {
  /** Tool arguments: null until the host delivers them (approval flows deliver them late). */
  input: Json | null;
  /** The tool result: null until delivered. */
  result: ToolResult | null;
  cancelled: string | null;
  context: HostContext;
  widgetState: WidgetState | null;
  /** True once the MCP Apps handshake completed (false on a window.openai-only host). */
  connected: boolean;
  widgetSessionId: string | null;
}

export class BridgeError extends Error {
  constructor(
    message: string,
    readonly code: number | null = null,
  ) {
    super(message);
    this.name = "BridgeError";
  }
}

/** The host offers no way to do this (neither MCP Apps nor window.openai). */
export class Unsupported extends BridgeError {}

const NO_INSETS: Insets = { top: 0, right: 0, bottom: 0, left: 0 };

export const DEFAULT_CONTEXT: HostContext = {
  theme: "light",
  locale: typeof navigator !== "undefined" ? navigator.language || "en-US" : "en-US",
  displayMode: "inline",
  availableDisplayModes: ["inline"],
  maxHeight: null,
  safeArea: NO_INSETS,
  platform: null,
  styles: {},
};
// A host style value is a colour, a length, a font list: never a URL (a request the widget's CSP
// metadata does not declare) nor anything that could end the declaration.
const STYLE_VALUE = /^[^;{}<>\\]{1,200}$/;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export interface BridgeEnv {
  /** Where requests go (the host frame). */
  host: Pick<Window, "postMessage">;
  /** The widget's own window: messages arrive here, window.openai lives here. */
  self: Window;
}

export class Bridge {
  // What this widget told the model last (ui/update-model-context), by source.
  private readonly context: { state: Json | null; selection: Json | null } = { state: null, selection: null };
  private readonly listeners = new Set<() => void>();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private hostCapabilities: Json = {};
  private resultFromMcp = false;
  private inputFromMcp = false;
  private lastHeight = -1;
  private logTimes: number[] = [];
  // Log events wait for the tool result: it carries the widget session id the server log keys on.
  private logQueue: Json[] | null = [];
  private unmountLogged = false;
  private resultKey = "";
  private started = false;
  private snap: Snapshot;

  constructor(
    readonly appInfo: { name: string; version: string },
    private readonly env: BridgeEnv = { host: window.parent, self: window },
  ) {
    this.snap = {
      input: null,
      result: null,
      cancelled: null,
      context: DEFAULT_CONTEXT,
      widgetState: null,
      connected: false,
      widgetSessionId: null,
    };
  }

  get snapshot(): Snapshot {
    return this.snap;
  }

  private get openai(): OpenAiGlobals | undefined {
    return this.env.self.openai;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private update(patch: Partial<Snapshot>): void {
    this.snap = { ...this.snap, ...patch };
    for (const listener of [...this.listeners]) listener();
  }

  /** Listen, read what window.openai already holds, and start the MCP Apps handshake. */
  start(): Promise<void> {
    if (this.started) return Promise.resolve();
    this.started = true;
    this.env.self.addEventListener("message", (ev) => this.onMessage(ev));
    this.env.self.addEventListener("openai:set_globals", (ev) => {
      this.syncOpenAi(((ev as CustomEvent).detail?.globals ?? {}) as OpenAiGlobals);
    });
    this.env.self.addEventListener("pagehide", () => this.unmounted());
    this.syncOpenAi(this.openai ?? {});
    this.watchErrors();
    this.watchSize();
    return this.handshake();
  }

  private async handshake(): Promise<void> {
    try {
      // No deadline: a slow host (a sandbox proxy, a busy device) may answer late, and giving up
      // would leave the widget without its tool result forever. Until then, window.openai renders.
      const result = (await this.request("ui/initialize", {
        appInfo: this.appInfo,
        // ChatGPT renders inline and full screen only.
        appCapabilities: { availableDisplayModes: ["inline", "fullscreen"] },
        protocolVersion: PROTOCOL_VERSION,
      })) as { hostCapabilities?: Json; hostContext?: Json };
      this.hostCapabilities = result?.hostCapabilities ?? {};
      this.update({ connected: true, context: mergeContext(this.snap.context, result?.hostContext ?? {}) });
      // The host delivers tool input and result only after this notification.
      this.notify("ui/notifications/initialized", {});
      this.lastHeight = -1;
      this.reportSize();
    } catch {
      // The host refused the handshake: what window.openai offers is all there is.
    }
  }

  private unmounted(): void {
    if (this.unmountLogged) return;
    this.unmountLogged = true;
    this.log("widget.unmount", "info");
  }

  // ---- wire ------------------------------------------------------------------------------

  private post(message: JsonRpcMessage): void {
    this.env.host.postMessage(message, "*");
  }

  private notify(method: string, params: Json): void {
    this.post({ jsonrpc: "2.0", method, params });
  }

  // No deadline: a tool call may take minutes (a file analysis), and a late answer is still an answer.
  private request(method: string, params: Json): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ jsonrpc: "2.0", id, method, params });
    });
  }

  private onMessage(ev: MessageEvent): void {
    // Only the host frame speaks to us; anything else (other frames, extensions) is ignored.
    if (ev.source !== (this.env.host as unknown)) return;
    const msg = ev.data as JsonRpcMessage;
    if (!msg || msg.jsonrpc !== "2.0") return;
    if (msg.method === undefined) {
      const waiting = typeof msg.id === "number" ? this.pending.get(msg.id) : undefined;
      if (!waiting) return;
      this.pending.delete(msg.id as number);
      if (msg.error) waiting.reject(new BridgeError(msg.error.message, msg.error.code));
      else waiting.resolve(msg.result);
      return;
    }
    if (msg.id !== undefined) this.answer(msg.id, msg.method, msg.params ?? {});
    else this.onNotification(msg.method, msg.params ?? {});
  }

  /** Every host request gets exactly one response. */
  private answer(id: number | string, method: string, _params: Json): void {
    if (method === "ping") {
      this.post({ jsonrpc: "2.0", id, result: {} });
    } else if (method === "ui/resource-teardown") {
      this.unmounted();
      this.post({ jsonrpc: "2.0", id, result: {} });
    } else {
      this.post({ jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${method}` } });
    }
  }

  private onNotification(method: string, params: Json): void {
    switch (method) {
      case "ui/notifications/tool-input":
        this.inputFromMcp = true;
        this.update({ input: (params.arguments as Json) ?? {} });
        break;
      case "ui/notifications/tool-result":
        this.resultFromMcp = true;
        this.setResult(params as ToolResult);
        break;
      case "ui/notifications/tool-cancelled":
        this.update({ cancelled: String(params.reason ?? "cancelled") });
        this.flushLogs();
        break;
      case "ui/notifications/host-context-changed":
        this.update({ context: mergeContext(this.snap.context, params) });
        break;
    }
  }

  private setResult(result: ToolResult): void {
    // ChatGPT may hand the same result over both channels, and set_globals repeats unchanged
    // globals: widgets react to a new result, not to a second delivery of the same one.
    const key = JSON.stringify(result);
    if (key === this.resultKey) return;
    this.resultKey = key;
    const sid = result._meta?.[WIDGET_SESSION_KEY];
    this.update({
      result,
      cancelled: null,
      widgetSessionId: typeof sid === "string" && sid ? sid : this.snap.widgetSessionId,
    });
    this.flushLogs();
  }

  private flushLogs(): void {
    const queued = this.logQueue;
    if (!queued) return;
    this.logQueue = null;
    this.log("widget.mount", "info", { connected: this.snap.connected, openai: Boolean(this.openai) });
    for (const args of queued) this.sendLog(args);
  }

  private syncOpenAi(globals: OpenAiGlobals): void {
    const patch: Partial<Snapshot> = {};
    if (!this.inputFromMcp && globals.toolInput != null) patch.input = globals.toolInput;
    if (globals.widgetState !== undefined) patch.widgetState = globals.widgetState ?? null;
    if (Object.keys(patch).length) this.update(patch);
    if (!this.resultFromMcp && (globals.toolOutput != null || globals.toolResponseMetadata != null)) {
      const all = this.openai ?? {};
      const meta = (globals.toolResponseMetadata ?? all.toolResponseMetadata ?? undefined) as Json | undefined;
      this.setResult({
        structuredContent: (globals.toolOutput ?? all.toolOutput ?? undefined) as Json | undefined,
        _meta: meta,
        // window.openai carries no isError: a linking challenge in the metadata is the one error it shows.
        isError: Boolean(meta && meta[WWW_AUTHENTICATE]) || undefined,
      });
    }
    const ctx: Json = {};
    if (globals.theme) ctx.theme = globals.theme;
    if (globals.locale) ctx.locale = globals.locale;
    if (globals.displayMode) ctx.displayMode = globals.displayMode;
    if (typeof globals.maxHeight === "number") ctx.containerDimensions = { maxHeight: globals.maxHeight };
    const safe = globals.safeArea as { insets?: Insets } & Partial<Insets> | undefined;
    if (safe) ctx.safeAreaInsets = safe.insets ?? safe;
    if (Object.keys(ctx).length) this.update({ context: mergeContext(this.snap.context, ctx) });
  }

  // ---- what widgets call -----------------------------------------------------------------

  /** Call a tool of this server. The widget session id travels in `_meta` so the server log can follow it. */
  async callTool(name: string, args: Json = {}): Promise<ToolResult> {
    if (this.snap.connected && this.hostCapabilities.serverTools) {
      const _meta: Json = {};
      if (this.snap.widgetSessionId) _meta[WIDGET_SESSION_KEY] = this.snap.widgetSessionId;
      return (await this.request("tools/call", { name, arguments: args, _meta })) as ToolResult;
    }
    const openai = this.openai;
    if (openai?.callTool) return openai.callTool(name, args);
    throw new Unsupported("this host cannot call tools");
  }

  /** Open a link outside the widget. ChatGPT checks the host against the resource's redirect_domains. */
  /**
   * Open `href` outside the widget. `anyOrigin`: a link to any site (a recipe's), which ChatGPT's
   * openExternal would refuse outside the widget's redirect_domains: the MCP Apps request first,
   * where the host asks the person.
   */
  async openLink(href: string, options: { anyOrigin?: boolean } = {}): Promise<void> {
    const openai = this.openai;
    if (options.anyOrigin && this.snap.connected) {
      const result = (await this.request("ui/open-link", { url: href })) as { isError?: boolean };
      if (result?.isError) throw new BridgeError("the host refused to open the link");
      return;
    }
    if (openai?.openExternal) {
      await openai.openExternal({ href });
      return;
    }
    if (this.snap.connected) {
      const result = (await this.request("ui/open-link", { url: href })) as { isError?: boolean };
      if (result?.isError) throw new BridgeError("the host refused to open the link");
      return;
    }
    throw new Unsupported("this host cannot open links");
  }

  /** Whether asking for `mode` can work: the MCP Apps host lists it, or ChatGPT's window.openai can ask. */
  canRequestDisplayMode(mode: DisplayMode): boolean {
    if (this.snap.connected && this.snap.context.availableDisplayModes.includes(mode)) return true;
    return Boolean(this.openai?.requestDisplayMode);
  }

  async requestDisplayMode(mode: DisplayMode): Promise<DisplayMode> {
    const openai = this.openai;
    if (this.snap.connected && this.snap.context.availableDisplayModes.includes(mode)) {
      try {
        const result = (await this.request("ui/request-display-mode", { mode })) as { mode?: DisplayMode };
        const granted = result?.mode ?? mode;
        this.update({ context: { ...this.snap.context, displayMode: granted } });
        return granted;
      } catch (err) {
        if (!openai?.requestDisplayMode) throw err;
      }
    }
    if (openai?.requestDisplayMode) {
      const result = await openai.requestDisplayMode({ mode });
      const granted = (result && result.mode) || mode;
      this.update({ context: { ...this.snap.context, displayMode: granted } });
      return granted;
    }
    throw new Unsupported(`this host cannot switch to ${mode}`);
  }

  /** Ask the assistant something on the user's behalf. */
  async sendFollowUp(prompt: string): Promise<void> {
    const openai = this.openai;
    if (openai?.sendFollowUpMessage) {
      await openai.sendFollowUpMessage({ prompt, scrollToBottom: true });
      return;
    }
    if (this.snap.connected) {
      await this.request("ui/message", { role: "user", content: [{ type: "text", text: prompt }] });
      return;
    }
    throw new Unsupported("this host cannot send messages");
  }

  /**
   * Persist widget state. ChatGPT keeps it with the message and shows `modelContent` to the model;
   * a pure MCP Apps host keeps it for this mount and gets `modelContent` as model context.
   */
  async setWidgetState(state: WidgetState): Promise<void> {
    this.update({ widgetState: state });
    const openai = this.openai;
    if (openai?.setWidgetState) {
      await openai.setWidgetState(state);
      return;
    }
    if (this.snap.connected && this.hostCapabilities.updateModelContext && state.modelContent !== undefined) {
      const text = typeof state.modelContent === "string" ? state.modelContent : JSON.stringify(state.modelContent);
      this.context.state = { type: "text", text };
      await this.sendContext();
    }
  }

  /**
   * Tell the model what the person selected here: MCP Apps `ui/update-model-context`, each call
   * replacing what this widget said before. ChatGPT shows the block as a removable attachment,
   * labelled by its `_meta` `openai/title` and `openai/thumbnail` (a block's `_meta` never reaches
   * the model). Feature-detected: false when the host takes no model context.
   */
  async tellModel(text: string, about: { title?: string; thumbnail?: string } = {}): Promise<boolean> {
    if (!this.snap.connected || !this.hostCapabilities.updateModelContext) return false;
    const meta: Json = {};
    if (about.title) meta["openai/title"] = about.title;
    if (about.thumbnail) meta["openai/thumbnail"] = { src: about.thumbnail };
    const block: Json = { type: "text", text };
    if (Object.keys(meta).length) block._meta = meta;
    this.context.selection = block;
    await this.sendContext();
    return true;
  }

  /** Each update replaces the widget's whole context: the state's block and the selection's go
   *  together, so neither erases the other. */
  private async sendContext(): Promise<void> {
    const content = [this.context.state, this.context.selection].filter((b) => b !== null);
    await this.request("ui/update-model-context", { content });
  }

  /**
   * The bytes of a file the HOST holds (a file entrypoint's `resourceUri`): `resources/read`, which
   * the host answers itself for the URIs it hands out (openai/mcp-extensions docs/spec.md).
   */
  async readHostFile(uri: string): Promise<{ bytes: Uint8Array; mimeType: string | undefined }> {
    if (!this.snap.connected) throw new Unsupported("this host cannot read files for the app");
    // The bytes as they are (a PDF, an image): a blob, never text the host decoded.
    const result = (await this.request("resources/read", {
      uri,
      _meta: { "openai/resource": { representation: "blob" } },
    })) as { contents?: Json[] };
    const content = result?.contents?.[0];
    if (!content) throw new BridgeError("the host returned no contents for the file");
    const mimeType = typeof content.mimeType === "string" ? content.mimeType : undefined;
    const size = typeof content.blob === "string" ? (content.blob.length * 3) / 4 : 0;
    if (size > MAX_HOST_FILE_BYTES) {
      // Decoding it would hold it twice in the widget's memory; the server refuses less already.
      throw new BridgeError(`the file is over ${MAX_HOST_FILE_BYTES / 1_000_000} MB`);
    }
    if (typeof content.blob === "string") {
      const raw = atob(content.blob);
      const bytes = new Uint8Array(raw.length);
      for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
      return { bytes, mimeType };
    }
    if (typeof content.text === "string") return { bytes: new TextEncoder().encode(content.text), mimeType };
    throw new BridgeError("the host returned the file in a form the app cannot read");
  }

  /** A fresh temporary URL for a file returned by reference; null when the host cannot mint one. */
  async fileDownloadUrl(fileId: string): Promise<string | null> {
    const openai = this.openai;
    if (!openai?.getFileDownloadUrl) return null;
    const { downloadUrl } = await openai.getFileDownloadUrl({ fileId });
    return downloadUrl || null;
  }

  get canUpload(): boolean {
    return Boolean(this.openai?.uploadFile);
  }

  async uploadFile(file: File): Promise<LibraryFile> {
    const openai = this.openai;
    if (!openai?.uploadFile) throw new Unsupported("this host does not take uploads");
    const { fileId } = await openai.uploadFile(file, { library: true });
    return { fileId, fileName: file.name, mimeType: file.type || undefined };
  }

  /** The user's file library when the host has one; otherwise `pick` chooses a local file to upload. */
  async selectFiles(pick: () => Promise<File | null>): Promise<LibraryFile[]> {
    const openai = this.openai;
    if (openai?.selectFiles) return openai.selectFiles();
    const file = await pick();
    return file ? [await this.uploadFile(file)] : [];
  }

  async requestModal(template: string, params: Json = {}): Promise<unknown> {
    const openai = this.openai;
    if (!openai?.requestModal) throw new Unsupported("this host has no modals");
    return openai.requestModal({ template, params });
  }

  async requestClose(): Promise<void> {
    await this.openai?.requestClose?.();
  }

  async setOpenInAppUrl(href: string): Promise<void> {
    await this.openai?.setOpenInAppUrl?.({ href });
  }

  /** Report a key event or an error to the server log (app-only tool; best effort, never throws). */
  log(event: string, level: "debug" | "info" | "warning" | "error" = "info", data?: Json, message?: string): void {
    const now = Date.now();
    this.logTimes = this.logTimes.filter((t) => now - t < LOG_WINDOW_MS);
    if (this.logTimes.length >= LOG_BURST) return;
    this.logTimes.push(now);
    const args: Json = { event, level, widget: this.appInfo.name };
    if (message) args.message = message.slice(0, 1000);
    if (data) args.data = data;
    if (this.logQueue) this.logQueue.push(args);
    else this.sendLog(args);
  }

  private sendLog(args: Json): void {
    this.callTool(LOG_TOOL, args).catch(() => undefined);
  }

  // ---- size and errors -------------------------------------------------------------------

  private watchSize(): void {
    if (!this.env.self.document?.documentElement || typeof ResizeObserver === "undefined") return;
    new ResizeObserver(() => this.reportSize()).observe(this.env.self.document.documentElement);
    this.reportSize();
  }

  private reportSize(): void {
    const root = this.env.self.document?.documentElement;
    if (!root) return;
    const height = Math.ceil(root.getBoundingClientRect().height);
    if (height === this.lastHeight) return;
    this.lastHeight = height;
    // Nothing but ui/initialize goes to the host before the handshake completed.
    if (this.snap.connected) this.notify("ui/notifications/size-changed", { height });
    this.openai?.notifyIntrinsicHeight?.(height);
  }

  private watchErrors(): void {
    this.env.self.addEventListener("error", (ev) => {
      this.log("widget.error", "error", { source: (ev as ErrorEvent).filename ?? "" }, String((ev as ErrorEvent).message));
    });
    this.env.self.addEventListener("unhandledrejection", (ev) => {
      this.log("widget.error", "error", undefined, String((ev as PromiseRejectionEvent).reason));
    });
  }
}

/** Merge a (partial) MCP Apps host context into ours. */
export function mergeContext(current: HostContext, incoming: Json): HostContext {
  const next = { ...current };
  if (incoming.theme === "light" || incoming.theme === "dark") next.theme = incoming.theme;
  if (typeof incoming.locale === "string" && incoming.locale) next.locale = canonicalLocale(incoming.locale, next.locale);
  if (isMode(incoming.displayMode)) next.displayMode = incoming.displayMode;
  if (Array.isArray(incoming.availableDisplayModes)) {
    const modes = incoming.availableDisplayModes.filter(isMode);
    if (modes.length) next.availableDisplayModes = modes;
  }
  const dims = incoming.containerDimensions as { maxHeight?: number; height?: number } | undefined;
  if (dims) {
    const max = dims.maxHeight ?? dims.height;
    next.maxHeight = typeof max === "number" && max > 0 ? max : null;
  }
  const insets = incoming.safeAreaInsets as Partial<Insets> | undefined;
  if (insets && typeof insets === "object") {
    next.safeArea = {
      top: Number(insets.top) || 0,
      right: Number(insets.right) || 0,
      bottom: Number(insets.bottom) || 0,
      left: Number(insets.left) || 0,
    };
  }
  if (typeof incoming.platform === "string") next.platform = incoming.platform;
  const variables = (incoming.styles as { variables?: unknown } | undefined)?.variables;
  if (variables && typeof variables === "object") {
    const styles: Record<string, string> = {};
    for (const [name, value] of Object.entries(variables as Record<string, unknown>)) {
      if (/^--[a-z0-9-]{1,60}$/.test(name) && typeof value === "string" && STYLE_VALUE.test(value) && !/url\(/i.test(value)) {
        styles[name] = value;
      }
    }
    next.styles = styles;
  }
  return next;
}

/** A BCP 47 tag Intl accepts ("en_US" -> "en-US"); `fallback` when the host sent something unusable. */
export function canonicalLocale(tag: string, fallback: string): string {
  try {
    return Intl.getCanonicalLocales(tag.trim().replace(/_/g, "-"))[0] ?? fallback;
  } catch {
    return fallback;
  }
}

function isMode(value: unknown): value is DisplayMode {
  return value === "inline" || value === "fullscreen" || value === "pip";
}

/**
 * A result that carries an OAuth challenge: the user must (re)link their account. An error result
 * with the challenge in `_meta`; on a window.openai-only host (no isError there), a challenge with
 * no structuredContent.
 */
export function needsSignIn(result: ToolResult | null | undefined): boolean {
  const challenge = result?._meta?.[WWW_AUTHENTICATE];
  const present = (typeof challenge === "string" || Array.isArray(challenge)) && challenge.length > 0;
  return Boolean(result && present && (result.isError || result.structuredContent == null));
}

/**
 * The text of a result's first text block written for the person (error messages, the transcript
 * line): a block whose `annotations.audience` leaves out "user" is advice for the model (what to
 * call next, what to ask), never shown.
 */
export function resultText(result: ToolResult | null | undefined): string {
  const forPerson = (c: Record<string, unknown>) => {
    const audience = (c.annotations as { audience?: unknown } | undefined)?.audience;
    return !Array.isArray(audience) || audience.includes("user");
  };
  const block = result?.content?.find(
    (c) => c.type === "text" && typeof c.text === "string" && forPerson(c),
  );
  return block?.text ?? "";
}
