// This server, seen from the host page: JSON-RPC on /mcp (same origin) and the built-in
// authorization server (discovery, dynamic registration, PKCE S256, resource-bound tokens).

export type Json = Record<string, any>;

const PROTOCOL = "2025-06-18";
// The model's calls go out as ChatGPT sends them today: stateless 2026-07-28, declaring OpenAI's
// form capability, so a tool that needs the person's answer asks with a form (input_required).
const ASKING_PROTOCOL = "2026-07-28";
const ASKING_ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": ASKING_PROTOCOL,
  "io.modelcontextprotocol/clientInfo": { name: "devhost", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {
    elicitation: { form: {} },
    extensions: {
      "openai/elicitation": { form: {} },
      "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] },
    },
  },
};

/** The person's answer to a form, sent back with the state the question came with. */
export interface Answer {
  inputResponses: Json;
  requestState?: string;
}
const TOKEN_KEY = "devhost.token";
const CLIENT_KEY = "devhost.client";
const FLOW_KEY = "devhost.flow";

export class McpError extends Error {}

export class Server {
  private id = 0;
  private initialized: Promise<void> | null = null;
  /** What initialize said the server offers (OpenAI's extensions in `experimental` on 2025). */
  capabilities: Json = {};

  constructor(readonly origin: string = location.origin) {}

  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  signOut(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  }

  async rpc(
    method: string,
    params: Json = {},
    onProgress?: (progress: Json) => void,
    modern: Record<string, string> | null = null,
  ): Promise<Json> {
    if (method !== "initialize" && !modern) await this.initialize();
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(modern ?? {}),
    };
    if (method !== "initialize" && !modern) headers["mcp-protocol-version"] = PROTOCOL;
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const resp = await fetch(`${this.origin}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: ++this.id, method, params }),
    });
    if (resp.status === 401) {
      this.signOut();
      throw new McpError("401 from /mcp: the token was refused (signed out)");
    }
    const streamed = resp.headers.get("content-type")?.startsWith("text/event-stream");
    const body = streamed
      ? await readStream(resp, onProgress)
      : await resp.json().catch(() => null);
    if (!body) throw new McpError(`${method}: HTTP ${resp.status} without a JSON body`);
    if (body.error) throw new McpError(`${method}: ${body.error.message}`);
    return body.result as Json;
  }

  private initialize(): Promise<void> {
    this.initialized ??= this.rpc("initialize", {
      protocolVersion: PROTOCOL,
      capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } },
      clientInfo: { name: "devhost", version: "1" },
    }).then((result) => {
      this.capabilities = result.capabilities ?? {};
    });
    return this.initialized;
  }

  async listTools(): Promise<Json[]> {
    return ((await this.rpc("tools/list")).tools ?? []) as Json[];
  }

  /** With ``onProgress``, the call asks for progress (a progressToken): the server answers it as
   * a stream, its notifications/progress then its result. */
  async callTool(
    name: string,
    args: Json,
    meta: Json,
    onProgress?: (progress: Json) => void,
  ): Promise<Json> {
    const withToken = onProgress ? { ...meta, progressToken: `devhost-${this.id + 1}` } : meta;
    return this.rpc("tools/call", { name, arguments: args, _meta: withToken }, onProgress);
  }

  /** A call of the model's, on 2026-07-28 with the form capability; ``answer``: the retry that
   * carries the person's answer to the form the last answer asked. */
  async callAsking(
    name: string,
    args: Json,
    meta: Json,
    onProgress?: (progress: Json) => void,
    answer?: Answer,
  ): Promise<Json> {
    const withToken = onProgress ? { ...meta, progressToken: `devhost-${this.id + 1}` } : meta;
    const _meta = { ...withToken, ...ASKING_ENVELOPE };
    const params: Json = { name, arguments: args, _meta, ...(answer ?? {}) };
    const headers = {
      "mcp-protocol-version": ASKING_PROTOCOL,
      "mcp-method": "tools/call",
      "mcp-name": name,
    };
    return this.rpc("tools/call", params, onProgress, headers);
  }

  async readResource(uri: string): Promise<Json> {
    return this.rpc("resources/read", { uri });
  }

  async logs(widgetSessionId: string, after: number): Promise<{ lines: Json[]; last: number }> {
    const q = new URLSearchParams({ widget_session_id: widgetSessionId, after: String(after) });
    const resp = await fetch(`${this.origin}/dev/logs?${q}`);
    if (!resp.ok) return { lines: [], last: after };
    return resp.json();
  }

  // ---- sign-in: the real authorization code flow against this server ------------------------

  async startSignIn(): Promise<void> {
    const meta = await (await fetch(`${this.origin}/.well-known/oauth-authorization-server`)).json();
    const redirectUri = `${this.origin}/dev/host`;
    let client = JSON.parse(localStorage.getItem(CLIENT_KEY) || "null") as { id: string; redirect: string } | null;
    if (!client || client.redirect !== redirectUri) {
      const reg = await fetch(meta.registration_endpoint, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          client_name: "Host emulator (development)",
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: "none",
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
        }),
      });
      const body = await reg.json();
      if (!reg.ok) throw new McpError(`registration refused: ${body.error_description || body.error}`);
      client = { id: body.client_id, redirect: redirectUri };
      localStorage.setItem(CLIENT_KEY, JSON.stringify(client));
    }
    const verifier = randomString(48);
    const state = randomString(16);
    const challenge = await s256(verifier);
    sessionStorage.setItem(FLOW_KEY, JSON.stringify({ verifier, state, token: meta.token_endpoint, client: client.id }));
    const q = new URLSearchParams({
      response_type: "code",
      client_id: client.id,
      redirect_uri: redirectUri,
      scope: (meta.scopes_supported ?? []).join(" "),
      state,
      code_challenge: challenge,
      code_challenge_method: "S256",
      resource: `${this.origin}/mcp`,
    });
    location.assign(`${meta.authorization_endpoint}?${q}`);
  }

  /** Back from /authorize with ?code&state: redeem it. Returns an error text, or null. */
  async finishSignIn(): Promise<string | null> {
    const params = new URLSearchParams(location.search);
    const flow = JSON.parse(sessionStorage.getItem(FLOW_KEY) || "null");
    if (!params.has("code") && !params.has("error")) return null;
    history.replaceState(null, "", `${this.origin}/dev/host`);
    sessionStorage.removeItem(FLOW_KEY);
    if (params.get("error")) return `sign-in: ${params.get("error")} ${params.get("error_description") ?? ""}`;
    if (!flow || params.get("state") !== flow.state) return "sign-in: the state does not match this page's flow";
    const resp = await fetch(flow.token, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: params.get("code") ?? "",
        redirect_uri: `${this.origin}/dev/host`,
        client_id: flow.client,
        code_verifier: flow.verifier,
        resource: `${this.origin}/mcp`,
      }),
    });
    const body = await resp.json();
    if (!resp.ok) return `token endpoint: ${body.error_description || body.error}`;
    sessionStorage.setItem(TOKEN_KEY, body.access_token);
    return null;
  }
}

function randomString(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return base64url(raw);
}

async function s256(text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A streamed (SSE) answer: each notifications/progress to ``onProgress`` as it arrives, then the
 * response itself. */
async function readStream(
  resp: Response,
  onProgress?: (progress: Json) => void,
): Promise<Json | null> {
  if (!resp.body) return null;
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let answer: Json | null = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    // CRLF line ends (the SDK's SSE writer) may be split between two chunks: a trailing \r
    // waits for the next one before the buffer is normalised.
    const held = buffer.endsWith("\r") ? "\r" : "";
    buffer = buffer.slice(0, buffer.length - held.length).replace(/\r\n/g, "\n");
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trim())
        .join("\n");
      if (!data) continue; // a keepalive comment, or an event without data
      const message = JSON.parse(data) as Json;
      if (message.method === "notifications/progress") onProgress?.(message.params ?? {});
      else if ("result" in message || "error" in message) answer = message;
    }
    buffer += held;
  }
  return answer;
}
