// The shapes the bridge speaks: MCP Apps (the standard, JSON-RPC over postMessage) and the
// window.openai extensions ChatGPT adds (docs/chatgpt-contract.md; SPEC §6).

export type Json = Record<string, unknown>;
export type DisplayMode = "inline" | "fullscreen" | "pip";
export type Theme = "light" | "dark";

export interface ToolResult {
  content?: Array<{ type: string; text?: string; [key: string]: unknown }>;
  structuredContent?: Json;
  _meta?: Json;
  isError?: boolean;
}

export interface Insets {
  top: number;
  right: number;
  bottom: number;
  left: number;
}

/** What the widget renders against: merged from the MCP Apps host context and window.openai globals. */
export interface HostContext {
  theme: Theme;
  locale: string;
  displayMode: DisplayMode;
  availableDisplayModes: DisplayMode[];
  maxHeight: number | null;
  safeArea: Insets;
  platform: string | null;
  /** The host's CSS variables (MCP Apps `styles.variables`: fonts, colours, radii), by name. */
  styles: Record<string, string>;
}

/** ChatGPT's structured widget state: what the model may see, what stays private, image ids. */
export interface WidgetState {
  modelContent?: unknown;
  privateContent?: Json;
  imageIds?: string[];
}

export interface LibraryFile {
  fileId: string;
  fileName?: string;
  mimeType?: string;
}

/** The subset of ChatGPT's window.openai the bridge uses; every member may be missing. */
export interface OpenAiGlobals {
  toolInput?: Json | null;
  toolOutput?: Json | null;
  toolResponseMetadata?: Json | null;
  widgetState?: WidgetState | null;
  theme?: Theme;
  locale?: string;
  displayMode?: DisplayMode;
  maxHeight?: number;
  safeArea?: { insets?: Insets } | Insets;
  callTool?: (name: string, args: Json) => Promise<ToolResult>;
  setWidgetState?: (state: WidgetState) => Promise<void> | void;
  sendFollowUpMessage?: (args: { prompt: string; scrollToBottom?: boolean }) => Promise<void>;
  requestDisplayMode?: (args: { mode: DisplayMode }) => Promise<{ mode: DisplayMode } | void>;
  requestModal?: (args: { template?: string; params?: Json }) => Promise<unknown>;
  requestClose?: () => Promise<void> | void;
  notifyIntrinsicHeight?: (height: number) => void;
  openExternal?: (args: { href: string; redirectUrl?: boolean | string }) => Promise<void> | void;
  setOpenInAppUrl?: (args: { href: string }) => Promise<void> | void;
  uploadFile?: (file: File, options?: { library?: boolean }) => Promise<{ fileId: string }>;
  selectFiles?: () => Promise<LibraryFile[]>;
  getFileDownloadUrl?: (args: { fileId: string }) => Promise<{ downloadUrl: string }>;
}

declare global {
  interface Window {
    openai?: OpenAiGlobals;
  }
}

export interface JsonRpcMessage {
  jsonrpc: "2.0";
  id?: number | string;
  method?: string;
  params?: Json;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}
