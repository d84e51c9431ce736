// The host emulator: plays ChatGPT's host for this server's widgets (development only, /dev/host).
//
// Strict like the MCP Apps spec: the widget gets its tool input and result only after it sent
// `ui/notifications/initialized`; every host request must get exactly one response; anything
// else is listed as a protocol violation (the browser tests assert the list stays empty).
//
// Automation API (browser tests): `window.hostEmulator` —
//   ready: Promise<void>                      tools listed, sign-in finished
//   call(name, args, {delayInputMs, delayResultMs, openai}) -> Promise<result>   call + mount its widget
//   setTheme(t) / setLocale(l) / setDisplayMode(m)   host context changes (both channels)
//   setHostStyles(vars | null)                the host's CSS variables (MCP Apps styles)
//   remount() -> Promise<void>                tear down and mount the same result again (state kept)
//   state: {widgetSessionId, initialized, displayMode, widgetStates, widgetErrors}
//   violations, widgetCalls, links, messages, modelContext, logs, progress: arrays of what happened
//     (progress: the notifications/progress of the last call, which asks for them)
//   forms: each form a call asked (key, message, schema, the sealed state's length, the answer);
//     the form shows in #form-box (data-testid form, field-<name>, form-submit/decline/cancel)
//   addToLibrary(file) -> fileId              put a File in the fake library (kept by /dev/files)
//   openFile(file) -> Promise<result>        a file chosen on the computer, as a file entrypoint
//                                            opens it (the host answers resources/read on its URI)
//   openEntrypoint(tool) / quickAction(title) -> Promise<result>   the sidebar's buttons
//   attachments(): what the widget told the model (ui/update-model-context), as ChatGPT shows it
//   openSettings() -> Promise<result>        the app's settings (openai/settings' readTool) shown
//     in #settings-box as native-like controls (data-testid setting-<key>, settings-save: the
//     changed ones only, through the updateTool; a group's button calls its tool)
//   mention(query) -> Promise<items>         the composer's @-mention search (openai/mentions'
//     searchTool); the items show under #composer, a click reads one as a resource
//   frame(): HTMLIFrameElement | null

import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { type Answer, type Json, Server } from "./server";
import { SHIM_TYPE, injectShim, shimScript } from "./shim";

type Mode = "inline" | "fullscreen" | "pip";
const APP_MIME = "text/html;profile=mcp-app";
const INIT_DEADLINE_MS = 5000;
const MAX_HEIGHT = 480;

const server = new Server();
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const record = {
  violations: [] as string[],
  widgetCalls: [] as Json[],
  links: [] as Json[],
  messages: [] as Json[],
  modelContext: [] as Json[],
  logs: [] as Json[],
  progress: [] as Json[],
  forms: [] as Json[],
};
const state = {
  widgetSessionId: "",
  initialized: false,
  theme: "light" as "light" | "dark",
  locale: "en-US",
  displayMode: "inline" as Mode,
  widgetStates: {} as Record<string, unknown>,
  // Every error a widget reported (widget.error through the log tool), never cleared: a crash
  // inside a widget frame is invisible to the host page otherwise.
  widgetErrors: [] as Json[],
  tools: [] as Json[],
  // The host's CSS variables (MCP Apps styles), as ChatGPT sends its own: none until set.
  hostStyles: null as Record<string, string> | null,
};

interface Mounted {
  tool: Json;
  args: Json;
  result: Json;
  html: string;
  resourceMeta: Json;
  openai: boolean;
  delayInputMs: number;
  delayResultMs: number;
  bridge?: AppBridge;
  iframe?: HTMLIFrameElement;
  pollTimer?: number;
  lastLog: number;
}
let mounted: Mounted | null = null;
/** The fake file library: ChatGPT's file ids for files kept by the server's /dev/files store. */
const files = new Map<string, { name: string; type: string; url: string }>();
/** Files chosen on the computer for a file entrypoint, by the opaque URI the host hands the app:
 *  the host, not the server, answers resources/read on them (openai/mcp-extensions docs/spec.md). */
const hostFiles = new Map<string, File>();

async function addToLibrary(file: File): Promise<string> {
  const resp = await fetch(`${location.origin}/dev/files`, {
    method: "POST",
    headers: { "content-type": file.type || "application/octet-stream", "x-file-name": file.name },
    body: file,
  });
  const body = await resp.json();
  if (!resp.ok) throw new Error(`library upload refused: ${body.error_description ?? resp.status}`);
  const id = `file-dev-${files.size + 1}`;
  files.set(id, { name: file.name, type: file.type, url: body.url });
  render();
  return id;
}

function violation(text: string): void {
  record.violations.push(text);
  render();
}

function text(id: string, value: unknown): void {
  $(id).textContent = typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function render(): void {
  text("violations", record.violations.length ? record.violations.join("\n") : "none");
  text("widget-calls", record.widgetCalls);
  text("requests", { links: record.links, messages: record.messages, modelContext: record.modelContext });
  showAttachments();
  text("logs", record.logs.map((l) => `${l.seq} ${l.level} ${l.event} ${l.tool ?? ""} ${l.widget_event ?? ""}`).join("\n"));
  text("session", state.widgetSessionId ? `widget session ${state.widgetSessionId}` : "no widget mounted");
  $("files").textContent = [...files.entries()].map(([id, f]) => `${id}  ${f.name} (${f.type || "?"})`).join("\n") || "empty";
}

function hostContext(available: Mode[]): Json {
  return {
    theme: state.theme,
    locale: state.locale,
    displayMode: state.displayMode,
    availableDisplayModes: available,
    containerDimensions: state.displayMode === "fullscreen" ? { maxHeight: window.innerHeight } : { maxHeight: MAX_HEIGHT },
    safeAreaInsets: { top: 0, right: 0, bottom: 0, left: 0 },
    platform: "web",
    userAgent: "devhost",
    ...(state.hostStyles ? { styles: { variables: state.hostStyles } } : {}),
  };
}

function openaiGlobals(): Json {
  return {
    theme: state.theme,
    locale: state.locale,
    displayMode: state.displayMode,
    maxHeight: state.displayMode === "fullscreen" ? window.innerHeight : MAX_HEIGHT,
    safeArea: { insets: { top: 0, right: 0, bottom: 0, left: 0 } },
    userAgent: { device: { type: "desktop" }, capabilities: { hover: true, touch: false } },
    view: { mode: state.displayMode },
  };
}

function availableModes(m: Mounted): Mode[] {
  const modes = (m.resourceMeta["openai/ui"]?.availableDisplayModes ?? ["inline"]) as Mode[];
  return modes.length ? modes : ["inline"];
}

function redirectAllowed(m: Mounted, href: string): boolean {
  let origin: string;
  try {
    origin = new URL(href).origin;
  } catch {
    return false;
  }
  const allowed = (m.resourceMeta["openai/widgetCSP"]?.redirect_domains ?? []) as string[];
  return allowed.includes(origin);
}

/** What ChatGPT adds to every tool call (the model's and the widget's), the person's coarse
 * location included (without it, a tool that needs a city asks for one: app/mcp/forms.py). */
function hostMeta(): Json {
  const meta: Json = {
    "openai/locale": state.locale,
    "openai/session": "devhost-session",
    "openai/subject": "devhost-subject",
  };
  const location = userLocation();
  if (location) meta["openai/userLocation"] = location;
  return meta;
}

/** The location form's `openai/userLocation` (coarse, as ChatGPT sends it), or none when it is
 * switched off. A field left empty is left out. */
function userLocation(): Json | null {
  if (($("no-location") as HTMLInputElement).checked) return null;
  const location: Json = {};
  for (const field of ["city", "region", "country", "timezone"]) {
    const value = ($(`location-${field}`) as HTMLInputElement).value.trim();
    if (value) location[field] = value;
  }
  return Object.keys(location).length ? location : null;
}

/** A tool call the WIDGET made: only tools it may see, with the request _meta a host adds. */
async function proxyCall(name: string, args: Json, from: "mcp-apps" | "window.openai", widgetMeta: Json = {}): Promise<Json> {
  const entry: Json = { from, name, args };
  record.widgetCalls.push(entry);
  if (name === "log_widget_event" && args.event === "widget.error") state.widgetErrors.push(args);
  const tool = state.tools.find((t) => t.name === name);
  const visibility = (tool?._meta?.ui?.visibility ?? ["model", "app"]) as string[];
  if (!tool || !visibility.includes("app")) {
    entry.error = `${name}: not a tool this widget may call`;
    violation(`the widget called ${name}, which is ${tool ? "not visible to apps" : "not listed"}`);
    throw new Error(entry.error);
  }
  // MCP Apps: the widget's own _meta travels (its bridge adds the widget session id itself);
  // window.openai.callTool has no _meta, so there the host adds the session id, as ChatGPT does.
  const meta = from === "mcp-apps"
    ? { ...hostMeta(), ...widgetMeta }
    : { ...hostMeta(), "openai/widgetSessionId": state.widgetSessionId };
  entry.meta = meta;
  try {
    entry.result = await server.callTool(name, args, meta);
  } catch (err) {
    entry.error = (err as Error).message;
    render();
    throw err;
  }
  render();
  return entry.result;
}

/**
 * A host setting changed: tell a mounted view on both channels, but only once it is initialized.
 * Before that the change goes into the context ui/initialize answers with (AppBridge keeps it),
 * and oninitialized brings the window.openai globals up to date.
 */
function pushContext(globals: Json): void {
  const m = mounted;
  if (!m?.bridge || !state.initialized) return;
  m.bridge.setHostContext(hostContext(availableModes(m)) as any);
  sendGlobals(globals);
}

function sendGlobals(globals: Json): void {
  mounted?.iframe?.contentWindow?.postMessage({ type: SHIM_TYPE, globals }, "*");
}

// ---- mounting ---------------------------------------------------------------------------

async function teardown(): Promise<void> {
  const m = mounted;
  if (!m?.bridge) return;
  window.clearInterval(m.pollTimer);
  if (state.initialized) {
    const answered = m.bridge.teardownResource({}).then(() => true, () => false);
    const inTime = await Promise.race([answered, sleep(2000).then(() => false)]);
    if (!inTime) violation("ui/resource-teardown got no response");
  }
  await m.bridge.close().catch(() => undefined);
  m.iframe?.remove();
  m.bridge = undefined;
  m.iframe = undefined;
}

async function mount(m: Mounted): Promise<void> {
  await teardown();
  mounted = m;
  state.initialized = false;
  const modes = availableModes(m);
  if (!modes.includes(state.displayMode)) state.displayMode = "inline";
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts allow-forms");
  iframe.dataset.testid = "widget-frame";
  iframe.title = `widget ${m.tool.name}`;
  iframe.style.height = "120px";
  const initialGlobals = {
    ...openaiGlobals(),
    toolInput: null,
    toolOutput: null,
    toolResponseMetadata: null,
    widgetState: state.widgetStates[state.widgetSessionId] ?? null,
  };
  iframe.srcdoc = m.openai ? injectShim(m.html, shimScript(initialGlobals)) : m.html;
  m.iframe = iframe;
  $("frame-box").dataset.displayMode = state.displayMode;
  $("frame-box").replaceChildren(iframe);

  const bridge = new AppBridge(
    null,
    { name: "devhost", version: "1" },
    {
      openLinks: {},
      serverTools: {},
      logging: {},
      message: { text: {} },
      serverResources: {},
      updateModelContext: { text: {}, structuredContent: {} },
    },
    { hostContext: hostContext(modes) },
  );
  m.bridge = bridge;
  bridge.oninitialized = () => {
    state.initialized = true;
    // Settings changed while the view was starting: AppBridge sends the difference, the shim gets all.
    bridge.setHostContext(hostContext(modes) as any);
    if (m.openai) sendGlobals(openaiGlobals());
    $("status").textContent = "view initialized";
    window.setTimeout(() => {
      void bridge.sendToolInput({ arguments: m.args });
      if (m.openai) sendGlobals({ toolInput: m.args });
    }, m.delayInputMs);
    window.setTimeout(() => {
      void bridge.sendToolResult(m.result as any);
      if (m.openai) sendGlobals({ toolOutput: m.result.structuredContent ?? null, toolResponseMetadata: m.result._meta ?? null });
    }, m.delayResultMs);
  };
  bridge.oncalltool = async (params) =>
    (await proxyCall(params.name, (params.arguments ?? {}) as Json, "mcp-apps", (params._meta ?? {}) as Json)) as any;
  bridge.onopenlink = async ({ url }) => {
    record.links.push({ via: "ui/open-link", url });
    render();
    return {};
  };
  bridge.onmessage = async (params) => {
    record.messages.push({ via: "ui/message", ...params });
    render();
    return {};
  };
  bridge.onreadresource = async ({ uri }) => {
    const file = hostFiles.get(uri);
    // Widgets here read only the files the host handed them (a file entrypoint's).
    if (!file) throw new Error(`unknown resource ${uri}`);
    const bytes = new Uint8Array(await file.arrayBuffer());
    let raw = "";
    for (const b of bytes) raw += String.fromCharCode(b);
    return {
      contents: [{ uri, mimeType: file.type || "application/octet-stream", blob: btoa(raw),
                   _meta: { "openai/resource": { representation: "blob" } } }],
    } as any;
  };
  bridge.onupdatemodelcontext = async (params) => {
    record.modelContext.push(params as Json);
    render();
    return {};
  };
  bridge.onrequestdisplaymode = async ({ mode }) => ({ mode: setDisplayMode(mode as Mode) });
  bridge.onsizechange = ({ height }) => {
    if (typeof height !== "number") return;
    const cap = state.displayMode === "fullscreen" ? window.innerHeight - 40 : MAX_HEIGHT;
    iframe.style.height = `${Math.min(Math.max(height, 40), cap)}px`;
  };
  bridge.onloggingmessage = (params) => {
    record.messages.push({ via: "notifications/message", ...params });
    render();
  };

  watchProtocol(iframe);
  let loads = 0;
  iframe.addEventListener("load", () => {
    // A second document in the frame is not the widget we vetted: cut it off from the host.
    if (++loads > 1 && mounted === m) {
      violation("the widget frame navigated away from the widget: unmounted");
      void teardown();
    }
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow!, iframe.contentWindow!));
  window.setTimeout(() => {
    if (mounted === m && !state.initialized) violation("view never initialized (no ui/notifications/initialized)");
  }, INIT_DEADLINE_MS);
  m.lastLog = 0;
  m.pollTimer = window.setInterval(() => void pollLogs(m), 1000);
  render();
}

/** What AppBridge would accept silently: traffic before ui/initialize. */
function watchProtocol(iframe: HTMLIFrameElement): void {
  let sawInitialize = false;
  const listener = (ev: MessageEvent) => {
    if (ev.source !== iframe.contentWindow) return;
    const msg = ev.data;
    if (!msg || msg.jsonrpc !== "2.0") return;
    if (msg.method === "ui/initialize") sawInitialize = true;
    else if (!sawInitialize) violation(`${msg.method ?? "a response"} sent before ui/initialize`);
  };
  window.addEventListener("message", listener);
}

async function pollLogs(m: Mounted): Promise<void> {
  if (mounted !== m || !state.widgetSessionId) return;
  const { lines, last } = await server.logs(state.widgetSessionId, m.lastLog);
  m.lastLog = last;
  if (lines.length) {
    record.logs.push(...lines);
    render();
  }
}

// ---- the window.openai channel ------------------------------------------------------------

window.addEventListener("message", async (ev) => {
  const m = mounted;
  if (!m?.iframe || ev.source !== m.iframe.contentWindow) return;
  const msg = ev.data;
  if (!msg || msg.type !== SHIM_TYPE || msg.reply) return;
  const reply = (result: unknown, error?: string) =>
    m.iframe?.contentWindow?.postMessage({ type: SHIM_TYPE, reply: true, id: msg.id, result, error }, "*");
  if (!state.initialized && msg.method !== "notifyIntrinsicHeight") {
    violation(`window.openai.${msg.method} called before the view initialized`);
  }
  const args = (msg.args ?? {}) as Json;
  try {
    switch (msg.method) {
      case "callTool":
        return reply(await proxyCall(args.name, args.args ?? {}, "window.openai"));
      case "setWidgetState":
        state.widgetStates[state.widgetSessionId] = args;
        render();
        return reply(null);
      case "sendFollowUpMessage":
        record.messages.push({ via: "sendFollowUpMessage", ...args });
        render();
        return reply(null);
      case "requestDisplayMode":
        return reply({ mode: setDisplayMode(args.mode as Mode) });
      case "requestModal":
      case "requestClose":
      case "setOpenInAppUrl":
        record.messages.push({ via: msg.method, ...args });
        render();
        return reply(null);
      case "notifyIntrinsicHeight":
        return reply(null);
      case "openExternal":
        if (!redirectAllowed(m, String(args.href))) {
          violation(`openExternal to ${args.href}: its origin is not in openai/widgetCSP.redirect_domains`);
          return reply(null, "refused: not in redirect_domains");
        }
        record.links.push({ via: "openExternal", url: args.href });
        render();
        return reply(null);
      case "uploadFile":
        return reply({ fileId: await addToLibrary(args.file as File) });
      case "selectFiles": {
        // ChatGPT shows a picker; this one picks the newest file of the library (none when it is empty).
        const newest = [...files.entries()].at(-1);
        return reply(newest ? [{ fileId: newest[0], fileName: newest[1].name, mimeType: newest[1].type }] : []);
      }
      case "getFileDownloadUrl": {
        const f = files.get(String(args.fileId));
        if (!f) return reply(null, `unknown file id ${args.fileId}`);
        return reply({ downloadUrl: f.url });
      }
      default:
        violation(`window.openai.${msg.method}: no such method`);
        return reply(null, "no such method");
    }
  } catch (err) {
    reply(null, (err as Error).message);
  }
});

// ---- host controls ------------------------------------------------------------------------

function setDisplayMode(mode: Mode): Mode {
  const available: Mode[] = mounted ? availableModes(mounted) : ["inline"];
  const granted: Mode = available.includes(mode) ? mode : state.displayMode;
  state.displayMode = granted;
  ($("display-mode") as HTMLSelectElement).value = granted;
  $("frame-box").dataset.displayMode = granted;
  pushContext({ displayMode: granted, maxHeight: openaiGlobals().maxHeight, view: { mode: granted } });
  return granted;
}

function setTheme(theme: "light" | "dark"): void {
  state.theme = theme;
  ($("theme") as HTMLSelectElement).value = theme;
  document.documentElement.dataset.theme = theme;
  pushContext({ theme });
}

/** The host's own look, sent to the widget as MCP Apps `styles.variables` (null: none). */
function setHostStyles(variables: Record<string, string> | null): void {
  state.hostStyles = variables;
  pushContext({});
}

function setLocale(locale: string): void {
  state.locale = locale;
  ($("locale") as HTMLSelectElement).value = locale;
  pushContext({ locale });
}

async function call(
  name: string,
  args: Json,
  opts: { delayInputMs?: number; delayResultMs?: number; openai?: boolean; mode?: Mode } = {},
) {
  const tool = state.tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool named ${name}`);
  // A new result's widget starts inline, as in a conversation: full screen belonged to the last
  // widget (an entrypoint opens its own full screen).
  state.displayMode = opts.mode ?? "inline";
  ($("display-mode") as HTMLSelectElement).value = state.displayMode;
  for (const list of Object.values(record)) list.length = 0;
  // After the reset: a view that does not answer its teardown is this call's violation.
  await teardown();
  state.widgetSessionId = `ws-${crypto.randomUUID()}`;
  ($("tool") as HTMLSelectElement).value = name;
  ($("args") as HTMLTextAreaElement).value = JSON.stringify(args);
  $("status").textContent = `calling ${name}…`;
  const meta = { ...hostMeta(), "openai/widgetSessionId": state.widgetSessionId };
  const onProgress = (progress: Json) => {
    // What ChatGPT shows of a long call: the server's words, and how far along it is.
    record.progress.push(progress);
    const done = progress.total ? Math.floor((100 * progress.progress) / progress.total) : null;
    const share = done === null ? "" : ` (${done}%)`;
    $("status").textContent = `${name}: ${progress.message ?? "working"}${share}`;
  };
  let result = await server.callAsking(name, args, meta, onProgress);
  // A question for the person (input_required): the form, then the same call again with the answer
  // and the sealed state, which any worker or replica opens.
  try {
    while (result.resultType === "input_required") {
      result = await server.callAsking(name, args, meta, onProgress, await answerForm(result));
    }
  } finally {
    $("form-box").hidden = true; // answered, or refused (an expired state): the form goes
  }
  // What ChatGPT adds to the result it hands the widget.
  result._meta = { ...(result._meta ?? {}), "openai/widgetSessionId": state.widgetSessionId };
  text("structured", result.structuredContent ?? null);
  text("meta", result._meta);
  text("content", (result.content ?? []).map((c: Json) => c.text ?? c.type).join("\n"));
  const uri = tool._meta?.ui?.resourceUri;
  if (uri !== tool._meta?.["openai/outputTemplate"]) violation(`ui.resourceUri ${uri} != openai/outputTemplate`);
  if (!uri) {
    $("status").textContent = `${name} has no widget`;
    $("frame-box").replaceChildren();
    return result;
  }
  const read = await server.readResource(uri);
  const content = (read.contents ?? [])[0] ?? {};
  if (content.mimeType !== APP_MIME) {
    violation(`resource ${uri} has mimeType ${content.mimeType}, not ${APP_MIME}`);
    return result;
  }
  await mount({
    tool,
    args,
    result,
    html: content.text,
    resourceMeta: content._meta ?? {},
    openai: opts.openai ?? !($("no-openai") as HTMLInputElement).checked,
    delayInputMs: opts.delayInputMs ?? Number(($("delay-input") as HTMLInputElement).value || 0),
    delayResultMs: opts.delayResultMs ?? Number(($("delay-result") as HTMLInputElement).value || 0),
    lastLog: 0,
  });
  $("status").textContent = `${name}: widget mounted, waiting for the view to initialize`;
  return result;
}

/** The person's answer to the form(s) an input_required result asks, filled in #form-box. */
async function answerForm(asked: Json): Promise<Answer> {
  const responses: Json = {};
  const requests = (asked.inputRequests ?? {}) as Record<string, Json>;
  for (const [key, request] of Object.entries(requests)) {
    const params = request.params ?? {};
    const openai = params._meta?.["openai/elicitation"]?.requestedSchema;
    const schema = (openai ?? params.requestedSchema ?? {}) as Json;
    const stateLength = (asked.requestState ?? "").length;
    const entry: Json = { key, message: params.message, schema, stateLength };
    record.forms.push(entry);
    $("status").textContent = `${params.message ?? "The tool asks something"} (form ${key})`;
    entry.answer = responses[key] = await showForm(params.message ?? "", schema);
  }
  $("form-state").textContent = asked.requestState
    ? `sealed state (${asked.requestState.length} characters) sent back with the answer`
    : "no state to send back";
  return { inputResponses: responses, requestState: asked.requestState };
}

function showForm(message: string, schema: Json): Promise<Json> {
  const box = $("form-box");
  const form = document.createElement("form");
  form.dataset.testid = "form";
  const heading = document.createElement("p");
  heading.textContent = message;
  form.append(heading);
  const required = new Set((schema.required ?? []) as string[]);
  const fields: Array<() => [string, unknown] | null> = [];
  for (const [name, field] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
    const picker = field["x-openai-input"];
    if (picker) {
      fields.push(pickerField(form, name, field, picker));
      continue;
    }
    const label = document.createElement("label");
    label.textContent = `${field.title ?? name}${required.has(name) ? " *" : ""} `;
    const input = document.createElement("input");
    input.name = name;
    input.dataset.testid = `field-${name}`;
    input.required = required.has(name);
    if (field.maxLength) input.maxLength = field.maxLength;
    if (field.minLength) input.minLength = field.minLength;
    if (typeof field.default === "string") input.value = field.default;
    if (field.description) input.title = field.description;
    const suggestions = (field["x-openai-suggestions"] ?? []) as Json[];
    if (suggestions.length) {
      const list = document.createElement("datalist");
      list.id = `suggest-${name}`;
      for (const s of suggestions) list.append(new Option(s.title ?? s.const, s.const));
      input.setAttribute("list", list.id);
      label.append(list);
    }
    label.append(input);
    form.append(label);
    fields.push(() => [name, input.value]);
  }
  const buttons = document.createElement("p");
  const submit = document.createElement("button");
  submit.type = "submit";
  submit.textContent = "Submit";
  submit.dataset.testid = "form-submit";
  buttons.append(submit);
  const done = new Promise<Json>((resolve) => {
    form.onsubmit = (e) => {
      e.preventDefault();
      const content: Json = {};
      for (const read of fields) {
        const pair = read();
        if (pair) content[pair[0]] = pair[1];
      }
      resolve({ action: "accept", content });
    };
    for (const action of ["decline", "cancel"]) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = action === "decline" ? "Decline" : "Cancel";
      button.dataset.testid = `form-${action}`;
      button.onclick = () => resolve({ action });
      buttons.append(button);
    }
  });
  form.append(buttons);
  box.replaceChildren(form);
  box.hidden = false;
  return done;
}

/** A picker over the options the server offered (the account's own items): one, or several. */
function pickerField(
  form: HTMLFormElement,
  name: string,
  field: Json,
  picker: Json,
): () => [string, unknown] {
  const many = field.type === "array";
  const set = document.createElement("fieldset");
  const legend = document.createElement("legend");
  legend.textContent = field.title ?? name;
  set.append(legend);
  set.dataset.testid = `field-${name}`;
  const inputs: HTMLInputElement[] = [];
  for (const option of (picker.options ?? []) as Json[]) {
    const label = document.createElement("label");
    const input = document.createElement("input");
    input.type = many ? "checkbox" : "radio";
    input.name = name;
    input.value = option.uri;
    input.required = !many;
    label.append(input);
    const thumbnail = option._meta?.["openai/thumbnail"]?.src;
    if (thumbnail) {
      const img = document.createElement("img");
      img.src = thumbnail;
      img.alt = "";
      img.width = 32;
      label.append(img);
    }
    label.append(` ${option.title ?? option.name}`);
    inputs.push(input);
    set.append(label);
  }
  form.append(set);
  const checked = () => inputs.filter((i) => i.checked).map((i) => i.value);
  return () => [name, many ? checked() : checked()[0]];
}

// ---- entrypoints (the sidebar, a conversation's panel, a file) -------------------------------

function entrypointsOf(tool: Json): Json[] {
  const found = tool._meta?.["openai/ui"]?.entrypoints;
  return Array.isArray(found) ? found : [];
}

/** What ChatGPT does from an entrypoint: the tool, called with `args`, its widget full screen. */
async function openEntrypoint(name: string, args: Json = {}): Promise<Json> {
  return call(name, args, { openai: true, mode: "fullscreen" });
}

async function quickAction(title: string): Promise<Json> {
  for (const tool of state.tools) {
    for (const entry of entrypointsOf(tool)) {
      const quick = entry.quickAction;
      if (quick?.title === title) return openEntrypoint(quick.target.name, quick.target.arguments ?? {});
    }
  }
  throw new Error(`no quick action titled ${title}`);
}

/** A file chosen on the computer: the tool whose file entrypoint takes its extension opens it. */
async function openFile(file: File): Promise<Json> {
  const ext = `.${(file.name.split(".").pop() ?? "").toLowerCase()}`;
  const tool = state.tools.find((t) =>
    entrypointsOf(t).some((e) => e.type === "file" && (e.extensions ?? []).includes(ext)));
  if (!tool) throw new Error(`no tool of this server opens ${ext} files`);
  const uri = `devhost-file://${crypto.randomUUID()}/${encodeURIComponent(file.name)}`;
  hostFiles.set(uri, file);
  return openEntrypoint(tool.name, { file: { name: file.name, resourceUri: uri } });
}

function showEntrypoints(): void {
  const box = $("entrypoints");
  const button = (label: string, testid: string, run: () => Promise<Json>) => {
    const b = document.createElement("button");
    b.textContent = label;
    b.dataset.testid = testid;
    b.onclick = () => void run().catch((e: Error) => ($("status").textContent = e.message));
    return b;
  };
  const items: HTMLElement[] = [];
  for (const tool of state.tools) {
    for (const entry of entrypointsOf(tool)) {
      const title = tool.title ?? tool.annotations?.title ?? tool.name;
      if (entry.type === "global") {
        items.push(button(`Sidebar: ${title}`, `entry-${tool.name}`, () => openEntrypoint(tool.name)));
        if (entry.quickAction) {
          const q = entry.quickAction;
          items.push(button(`Quick action: ${q.title}`, `quick-${q.target.name}`, () => quickAction(q.title)));
        }
      } else if (entry.type === "thread") {
        items.push(button(`This conversation: ${title}`, `thread-${tool.name}`, () => openEntrypoint(tool.name)));
      } else if (entry.type === "file") {
        const note = document.createElement("p");
        note.textContent = `${title} opens ${(entry.extensions ?? []).join(" ")} files (drop one below)`;
        items.push(note);
      }
    }
  }
  box.replaceChildren(...items);
  const drop = $("drop-zone");
  drop.ondragover = (e) => e.preventDefault();
  drop.ondrop = (e) => {
    e.preventDefault();
    const file = e.dataTransfer?.files?.[0];
    if (file) void openFile(file).catch((err: Error) => ($("status").textContent = err.message));
  };
  ($("open-file") as HTMLInputElement).onchange = (e) => {
    const file = (e.target as HTMLInputElement).files?.[0];
    if (file) void openFile(file).catch((err: Error) => ($("status").textContent = err.message));
  };
}

/** The model context the widget set last (each update replaces the one before), as ChatGPT
 *  shows it: an attachment per block, labelled by the block's `openai/title` and thumbnail. */
function attachments(): Json[] {
  const last = record.modelContext.at(-1);
  return ((last?.content ?? []) as Json[]).map((b) => ({
    title: b._meta?.["openai/title"] ?? null,
    thumbnail: b._meta?.["openai/thumbnail"]?.src ?? null,
    text: b.text ?? "",
  }));
}

function showAttachments(): void {
  $("attachments").replaceChildren(...attachments().map((a) => {
    const li = document.createElement("li");
    li.dataset.testid = "attachment";
    if (a.thumbnail) {
      const img = document.createElement("img");
      img.src = a.thumbnail;
      img.alt = "";
      img.width = 24;
      li.append(img);
    }
    const strong = document.createElement("strong");
    strong.textContent = a.title ?? "(untitled)";
    li.append(strong, ` ${a.text}`);
    return li;
  }));
}

// ---- the app's settings and the composer's @-mentions (server/discover's extensions) ---------

let extensions: Json = {};

function settingControl(key: string, schema: Json, value: unknown): HTMLElement {
  const label = document.createElement("label");
  label.className = "setting";
  const title = document.createElement("span");
  title.textContent = schema.title ?? key;
  let control: HTMLInputElement | HTMLSelectElement;
  if (schema.type === "boolean") {
    control = document.createElement("input");
    control.type = "checkbox";
    control.checked = value === true;
  } else if (Array.isArray(schema.enum)) {
    control = document.createElement("select");
    for (const option of schema.enum) control.add(new Option(String(option), String(option)));
    control.value = String(value);
  } else {
    control = document.createElement("input");
    control.type = schema.type === "integer" || schema.type === "number" ? "number" : "text";
    if (schema.minimum !== undefined) control.min = String(schema.minimum);
    if (schema.maximum !== undefined) control.max = String(schema.maximum);
    if (schema.maxLength !== undefined) control.maxLength = schema.maxLength;
    control.value = String(value ?? "");
  }
  control.dataset.testid = `setting-${key}`;
  control.dataset.key = key;
  control.dataset.original = JSON.stringify(value);
  label.append(title, control);
  if (schema.description) {
    const hint = document.createElement("small");
    hint.textContent = schema.description;
    label.append(hint);
  }
  return label;
}

function settingValue(control: HTMLInputElement | HTMLSelectElement, schema: Json): unknown {
  if (control instanceof HTMLInputElement && control.type === "checkbox") return control.checked;
  if (schema.type === "integer") return Number.parseInt(control.value, 10);
  if (schema.type === "number") return Number(control.value);
  return control.value;
}

/** What ChatGPT shows as the app's settings: the read tool's schema, values and layout. */
async function openSettings(): Promise<Json> {
  const names = extensions["openai/settings"];
  if (!names) throw new Error("this server offers no settings (no openai/settings capability)");
  const box = $("settings-box");
  const result = await server.callTool(names.readTool, {}, hostMeta());
  if (result.isError) {
    box.replaceChildren(Object.assign(document.createElement("p"), {
      textContent: personText(result),
    }));
    return result;
  }
  const { schema, values, layout } = result.structuredContent;
  const properties = schema.properties ?? {};
  const sections = (layout ?? [{ title: "Settings", items: Object.keys(properties).map((p) => ({ kind: "property", property: p })) }]) as Json[];
  const parts: HTMLElement[] = [];
  for (const group of sections) {
    const fieldset = document.createElement("fieldset");
    fieldset.append(Object.assign(document.createElement("legend"), { textContent: group.title }));
    for (const item of group.items) {
      if (item.kind === "property") fieldset.append(settingControl(item.property, properties[item.property], values[item.property]));
      else if (item.kind === "tool") {
        const tool = state.tools.find((t) => t.name === item.tool);
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = tool?.title ?? tool?.annotations?.title ?? item.tool;
        button.dataset.testid = `setting-tool-${item.tool}`;
        button.onclick = () => void openEntrypoint(item.tool).catch((e: Error) => ($("status").textContent = e.message));
        fieldset.append(button);
      }
    }
    parts.push(fieldset);
  }
  const save = document.createElement("button");
  save.type = "button";
  save.textContent = "Save";
  save.dataset.testid = "settings-save";
  save.onclick = () => void saveSettings(properties).catch((e: Error) => ($("settings-state").textContent = e.message));
  parts.push(save);
  box.replaceChildren(...parts);
  $("settings-state").textContent = "";
  return result;
}

async function saveSettings(properties: Json): Promise<Json> {
  const changed: Json = {};
  for (const control of $("settings-box").querySelectorAll<HTMLInputElement | HTMLSelectElement>("[data-key]")) {
    const key = control.dataset.key!;
    const value = settingValue(control, properties[key]);
    if (JSON.stringify(value) !== control.dataset.original) changed[key] = value;
  }
  if (!Object.keys(changed).length) {
    $("settings-state").textContent = "nothing changed";
    return {};
  }
  const result = await server.callTool(extensions["openai/settings"].updateTool, { set: changed }, hostMeta());
  if (!result.isError) await openSettings(); // the values as stored now
  $("settings-state").textContent = personText(result);
  return result;
}

/** The composer's @-mention search: what the person may mention, as they type after "@". */
async function mention(query: string): Promise<Json[]> {
  const names = extensions["openai/mentions"];
  if (!names) throw new Error("this server offers no @-mentions (no openai/mentions capability)");
  const result = await server.callTool(names.searchTool, { query }, hostMeta());
  const items = (result.isError ? [] : result.structuredContent?.items ?? []) as Json[];
  $("mentions").replaceChildren(...items.map((item) => {
    const li = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.testid = "mention";
    button.dataset.uri = item.uri;
    button.textContent = item.title ?? item.name;
    button.onclick = async () => {
      // Mentioned: the host reads the item (an account's own resource, or a public page's link).
      const read = item.uri.startsWith("app://") ? await server.readResource(item.uri) : null;
      $("mention-read").textContent = read ? (read.contents?.[0]?.text ?? JSON.stringify(read)) : item.uri;
    };
    li.append(button);
    return li;
  }));
  if (result.isError) $("mention-read").textContent = personText(result);
  return items;
}

async function remount(): Promise<void> {
  if (!mounted) throw new Error("nothing mounted");
  const again: Mounted = { ...mounted, bridge: undefined, iframe: undefined, delayInputMs: 0, delayResultMs: 0 };
  await mount(again);
}

// ---- page ---------------------------------------------------------------------------------

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function start(): Promise<void> {
  const signInError = await server.finishSignIn();
  if (signInError) violation(signInError);
  $("sign-in").onclick = () => void server.startSignIn().catch((e: Error) => ($("account").textContent = e.message));
  $("sign-out").onclick = () => {
    server.signOut();
    location.reload();
  };
  state.tools = await server.listTools();
  // OpenAI's extensions, where a 2025-era initialize puts them (the server says both eras).
  extensions = server.capabilities.experimental ?? {};
  const select = $("tool") as HTMLSelectElement;
  for (const t of state.tools) {
    const appOnly = JSON.stringify(t._meta?.ui?.visibility) === '["app"]';
    select.add(new Option(`${t.name}${appOnly ? " (app only)" : ""}`, t.name));
  }
  // Only what can be done: signing in while anonymous, signing out while signed in.
  $("sign-out").hidden = !server.token;
  $("sign-in").hidden = Boolean(server.token);
  if (server.token) {
    const profileTool = state.tools.find((t) => t._meta?.["openai/profile"] === true);
    const who = profileTool ? await server.callTool(profileTool.name, {}, {}) : null;
    $("account").textContent = who?.structuredContent
      ? `signed in: ${who.structuredContent.name ?? who.structuredContent.id}`
      : "signed in (no profile)";
    $("account").dataset.signedIn = "true";
  }
  $("call").onclick = async () => {
    try {
      await call(select.value, JSON.parse(($("args") as HTMLTextAreaElement).value || "{}"));
    } catch (err) {
      $("status").textContent = (err as Error).message;
    }
  };
  ($("theme") as HTMLSelectElement).onchange = (e) => setTheme((e.target as HTMLSelectElement).value as "light" | "dark");
  ($("locale") as HTMLSelectElement).onchange = (e) => setLocale((e.target as HTMLSelectElement).value);
  ($("display-mode") as HTMLSelectElement).onchange = (e) => setDisplayMode((e.target as HTMLSelectElement).value as Mode);
  $("remount").onclick = () => void remount();
  showEntrypoints();
  $("open-settings").onclick = () => void openSettings().catch((e: Error) => ($("settings-state").textContent = e.message));
  ($("composer") as HTMLInputElement).oninput = (e) => {
    const typed = (e.target as HTMLInputElement).value;
    const at = typed.lastIndexOf("@");
    if (at >= 0) void mention(typed.slice(at + 1)).catch((err: Error) => ($("mention-read").textContent = err.message));
  };
  ($("add-file") as HTMLInputElement).onchange = async (e) => {
    for (const f of (e.target as HTMLInputElement).files ?? []) await addToLibrary(f).catch((err: Error) => violation(err.message));
  };
  render();
}

const ready = start();
(window as any).hostEmulator = {
  ready,
  call,
  remount,
  setTheme,
  setHostStyles,
  setLocale,
  setDisplayMode,
  state,
  frame: () => mounted?.iframe ?? null,
  ...record,
  addToLibrary,
  openFile,
  openEntrypoint,
  quickAction,
  attachments,
  openSettings,
  mention,
};

/**
 * What ChatGPT shows the person of a result on its own surfaces (settings, mentions): the text
 * blocks written for them (`annotations.audience` with "user", or none), never the model's advice.
 */
function personText(result: Json): string {
  return ((result.content ?? []) as Json[])
    .filter((c) => {
      const audience = c.annotations?.audience;
      return !Array.isArray(audience) || audience.includes("user");
    })
    .map((c) => c.text)
    .join(" ");
}
