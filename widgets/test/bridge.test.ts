// @vitest-environment happy-dom
// The bridge against a scripted host: the MCP Apps handshake order, late delivery, answers to
// host requests, and the window.openai fallbacks.
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  Bridge,
  mergeContext,
  needsSignIn,
  resultText,
  DEFAULT_CONTEXT,
} from "../src/bridge/bridge";
import type { OpenAiGlobals } from "../src/bridge/types";

type Msg = { jsonrpc: "2.0"; id?: number | string; method?: string; params?: any; result?: any; error?: any };

function scriptedHost() {
  const sent: Msg[] = [];
  const host = { postMessage: (msg: Msg) => sent.push(msg) };
  const deliver = (data: unknown, source: unknown = host) =>
    window.dispatchEvent(new MessageEvent("message", { data, source: source as Window }));
  const answer = (method: string, result: unknown) => {
    const req = sent.find((m) => m.method === method && m.id !== undefined);
    if (!req) throw new Error(`no ${method} request was sent`);
    deliver({ jsonrpc: "2.0", id: req.id, result });
  };
  return { sent, host, deliver, answer };
}

const flush = () => new Promise((r) => setTimeout(r, 0));
const INIT_RESULT = {
  protocolVersion: "2026-01-26",
  hostInfo: { name: "test", version: "1" },
  hostCapabilities: { serverTools: {}, openLinks: {}, updateModelContext: {} },
  hostContext: { theme: "dark", locale: "fr-FR", displayMode: "inline", availableDisplayModes: ["inline", "fullscreen"],
                 containerDimensions: { maxHeight: 400 }, safeAreaInsets: { top: 5, right: 0, bottom: 0, left: 0 } },
};

async function connected(openai?: OpenAiGlobals) {
  const h = scriptedHost();
  (window as any).openai = openai;
  const bridge = new Bridge({ name: "t", version: "1" }, { host: h.host, self: window });
  const started = bridge.start();
  await flush();
  h.answer("ui/initialize", INIT_RESULT);
  await started;
  return { ...h, bridge };
}

afterEach(() => {
  delete (window as any).openai;
});

describe("MCP Apps handshake", () => {
  it("sends initialized only after the host answered ui/initialize, then applies the host context", async () => {
    const h = scriptedHost();
    const bridge = new Bridge({ name: "t", version: "1" }, { host: h.host, self: window });
    const started = bridge.start();
    await flush();
    expect(h.sent.map((m) => m.method)).toEqual(["ui/initialize"]);
    expect(h.sent[0].params.protocolVersion).toBe("2026-01-26");
    h.answer("ui/initialize", INIT_RESULT);
    await started;
    expect(h.sent[1]).toEqual({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} });
    expect(bridge.snapshot.connected).toBe(true);
    expect(bridge.snapshot.context).toMatchObject({ theme: "dark", locale: "fr-FR", maxHeight: 400,
                                                     availableDisplayModes: ["inline", "fullscreen"] });
    expect(bridge.snapshot.context.safeArea.top).toBe(5);
  });

  it("completes the handshake when the host answers ui/initialize late, and sends nothing else before", async () => {
    vi.useFakeTimers();
    try {
      const h = scriptedHost();
      const bridge = new Bridge({ name: "t", version: "1" }, { host: h.host, self: window });
      const started = bridge.start();
      bridge.log("early.event");
      await vi.advanceTimersByTimeAsync(30_000);
      expect(h.sent.map((m) => m.method)).toEqual(["ui/initialize"]);
      h.answer("ui/initialize", INIT_RESULT);
      await started;
      expect(bridge.snapshot.connected).toBe(true);
      expect(h.sent[1].method).toBe("ui/notifications/initialized");
    } finally {
      vi.useRealTimers();
    }
  });

  it("holds log events until the tool result names the widget session, then sends them with it", async () => {
    const { bridge, deliver, host, sent } = await connected();
    bridge.log("zoo.open", "info", { animal_id: "a" });
    expect(sent.filter((m) => m.method === "tools/call")).toEqual([]);
    deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result",
              params: { structuredContent: {}, _meta: { "openai/widgetSessionId": "ws-7" } } }, host);
    const logs = sent.filter((m) => m.method === "tools/call").map((m) => m.params);
    expect(logs.map((p) => p.arguments.event)).toEqual(["widget.mount", "zoo.open"]);
    expect(logs.every((p) => p._meta["openai/widgetSessionId"] === "ws-7")).toBe(true);
  });

  it("renders a tool result that arrives late, after input, and records the widget session id", async () => {
    const { bridge, deliver, host } = await connected();
    expect(bridge.snapshot.result).toBeNull();
    deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: { q: "x" } } }, host);
    expect(bridge.snapshot.input).toEqual({ q: "x" });
    deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result",
              params: { structuredContent: { n: 1 }, _meta: { "openai/widgetSessionId": "ws-1" } } }, host);
    expect(bridge.snapshot.result?.structuredContent).toEqual({ n: 1 });
    expect(bridge.snapshot.widgetSessionId).toBe("ws-1");
  });

  it("ignores messages from any window but the host", async () => {
    const { bridge, deliver } = await connected();
    deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: { structuredContent: { evil: 1 } } },
            { postMessage() {} });
    expect(bridge.snapshot.result).toBeNull();
  });

  it("answers every host request exactly once: ping, teardown, and unknown methods with -32601", async () => {
    const { deliver, host, sent } = await connected();
    const before = sent.length;
    deliver({ jsonrpc: "2.0", id: 91, method: "ping", params: {} }, host);
    deliver({ jsonrpc: "2.0", id: 92, method: "ui/resource-teardown", params: {} }, host);
    deliver({ jsonrpc: "2.0", id: 93, method: "sampling/createMessage", params: {} }, host);
    const replies = sent.slice(before).filter((m) => m.method === undefined);
    expect(replies).toEqual([
      { jsonrpc: "2.0", id: 91, result: {} },
      { jsonrpc: "2.0", id: 92, result: {} },
      { jsonrpc: "2.0", id: 93, error: { code: -32601, message: "Method not found: sampling/createMessage" } },
    ]);
  });

  it("calls tools through the host with the widget session id in _meta", async () => {
    const { bridge, deliver, host, sent } = await connected();
    deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result",
              params: { structuredContent: {}, _meta: { "openai/widgetSessionId": "ws-9" } } }, host);
    const pending = bridge.callTool("get_zoo_animal_details", { animal_id: "a" });
    const req = sent.find((m) => m.method === "tools/call" && m.params.name === "get_zoo_animal_details")!;
    expect(req.params).toEqual({ name: "get_zoo_animal_details", arguments: { animal_id: "a" },
                                 _meta: { "openai/widgetSessionId": "ws-9" } });
    deliver({ jsonrpc: "2.0", id: req.id, result: { structuredContent: { ok: true } } }, host);
    expect((await pending).structuredContent).toEqual({ ok: true });
  });

  it("turns a JSON-RPC error answer into a rejected promise", async () => {
    const { bridge, deliver, host, sent } = await connected();
    const pending = bridge.callTool("x");
    const req = sent.find((m) => m.method === "tools/call" && m.params.name === "x")!;
    deliver({ jsonrpc: "2.0", id: req.id, error: { code: -32602, message: "bad args" } }, host);
    await expect(pending).rejects.toThrow("bad args");
  });
});

describe("window.openai", () => {
  it("prefers openExternal for links and setWidgetState for state when ChatGPT offers them", async () => {
    const openExternal = vi.fn();
    const setWidgetState = vi.fn();
    const { bridge, sent } = await connected({ openExternal, setWidgetState });
    await bridge.openLink("https://docs.python.org/3/");
    await bridge.setWidgetState({ modelContent: "m", privateContent: { a: 1 } });
    expect(openExternal).toHaveBeenCalledWith({ href: "https://docs.python.org/3/" });
    expect(setWidgetState).toHaveBeenCalledWith({ modelContent: "m", privateContent: { a: 1 } });
    expect(sent.some((m) => m.method === "ui/open-link" || m.method === "ui/update-model-context")).toBe(false);
    expect(bridge.snapshot.widgetState).toEqual({ modelContent: "m", privateContent: { a: 1 } });
  });

  it("falls back to the standard requests on a host without window.openai", async () => {
    const { bridge, sent, deliver, host } = await connected();
    const link = bridge.openLink("https://example.com/");
    const req = sent.find((m) => m.method === "ui/open-link")!;
    expect(req.params).toEqual({ url: "https://example.com/" });
    deliver({ jsonrpc: "2.0", id: req.id, result: {} }, host);
    await link;
    const state = bridge.setWidgetState({ modelContent: { liked: ["Ember"] } });
    const ctx = sent.find((m) => m.method === "ui/update-model-context")!;
    expect(ctx.params).toEqual({ content: [{ type: "text", text: '{"liked":["Ember"]}' }] });
    deliver({ jsonrpc: "2.0", id: ctx.id, result: {} }, host);
    await state;
  });

  it("reads globals at start and follows openai:set_globals (late toolOutput, theme)", async () => {
    const openai: OpenAiGlobals = { theme: "light", toolOutput: null, widgetState: { privateContent: { liked: ["x"] } } };
    const { bridge } = await connected(openai);
    expect(bridge.snapshot.widgetState).toEqual({ privateContent: { liked: ["x"] } });
    window.dispatchEvent(new CustomEvent("openai:set_globals", {
      detail: { globals: { toolOutput: { animals: [] }, toolResponseMetadata: { "openai/widgetSessionId": "ws-2" } } } }));
    expect(bridge.snapshot.result?.structuredContent).toEqual({ animals: [] });
    expect(bridge.snapshot.widgetSessionId).toBe("ws-2");
    window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: { theme: "dark" } } }));
    expect(bridge.snapshot.context.theme).toBe("dark");
  });

  it("feature-detects selectFiles and falls back to a picked file plus uploadFile", async () => {
    const uploadFile = vi.fn(async () => ({ fileId: "file-1" }));
    const { bridge } = await connected({ uploadFile });
    const file = new File(["a,b\n1,2\n"], "t.csv", { type: "text/csv" });
    expect(await bridge.selectFiles(async () => file)).toEqual([{ fileId: "file-1", fileName: "t.csv", mimeType: "text/csv" }]);
    const selectFiles = vi.fn(async () => [{ fileId: "lib-1" }]);
    const withLibrary = await connected({ uploadFile, selectFiles });
    expect(await withLibrary.bridge.selectFiles(async () => file)).toEqual([{ fileId: "lib-1" }]);
  });

  it("tells the model a selection as one titled block, and reads a host-held file", async () => {
    const { bridge, sent, deliver, host } = await connected();
    const told = bridge.tellModel("The user selected Le Procope.", { title: "Le Procope", thumbnail: "https://x.test/p.png" });
    const ctx = sent.find((m) => m.method === "ui/update-model-context")!;
    expect(ctx.params).toEqual({ content: [{ type: "text", text: "The user selected Le Procope.",
      _meta: { "openai/title": "Le Procope", "openai/thumbnail": { src: "https://x.test/p.png" } } }] });
    deliver({ jsonrpc: "2.0", id: ctx.id, result: {} }, host);
    expect(await told).toBe(true);
    const read = bridge.readHostFile("file://host/1");
    const req = sent.find((m) => m.method === "resources/read")!;
    expect(req.params).toEqual({ uri: "file://host/1", _meta: { "openai/resource": { representation: "blob" } } });
    deliver({ jsonrpc: "2.0", id: req.id, result: { contents: [{ uri: "file://host/1", mimeType: "text/csv", blob: btoa("a,b\n") }] } }, host);
    const { bytes, mimeType } = await read;
    expect(new TextDecoder().decode(bytes)).toBe("a,b\n");
    expect(mimeType).toBe("text/csv");
  });

  it("keeps the state's block when a selection is told, and the other way round", async () => {
    const { bridge, sent, deliver, host } = await connected();
    const state = bridge.setWidgetState({ modelContent: { favourites: ["A"] } });
    deliver({ jsonrpc: "2.0", id: sent.at(-1)!.id, result: {} }, host);
    await state;
    const told = bridge.tellModel("The user selected B.", { title: "B" });
    const both = sent.at(-1)!;
    expect(both.method).toBe("ui/update-model-context");
    expect(both.params.content.map((b: any) => b.text)).toEqual(['{"favourites":["A"]}', "The user selected B."]);
    deliver({ jsonrpc: "2.0", id: both.id, result: {} }, host);
    await told;
  });

  it("tells no model context to a host that takes none", async () => {
    const h = scriptedHost();
    const bridge = new Bridge({ name: "t", version: "1" }, { host: h.host, self: window });
    const started = bridge.start();
    await flush();
    h.answer("ui/initialize", { ...INIT_RESULT, hostCapabilities: { serverTools: {} } });
    await started;
    expect(await bridge.tellModel("x", { title: "y" })).toBe(false);
    expect(h.sent.some((m) => m.method === "ui/update-model-context")).toBe(false);
  });

  it("reports a linking challenge from window.openai metadata as signed out", async () => {
    const { bridge } = await connected({ toolOutput: null,
      toolResponseMetadata: { "mcp/www_authenticate": ['Bearer error="insufficient_scope"'] } });
    expect(needsSignIn(bridge.snapshot.result)).toBe(true);
  });
});

describe("host context", () => {
  it("takes the host's CSS variables, never a URL or anything that ends a declaration", () => {
    const next = mergeContext(DEFAULT_CONTEXT, { styles: { variables: {
      "--color-background-primary": "#101010",
      "--font-sans": "Söhne, system-ui, sans-serif",
      "--color-text-primary": "red; background: url(https://x.test/a.png)",
      "--border-radius-lg": "url(https://x.test/b.png)",
      "not-a-variable": "1px",
      "--shadow-sm": 3,
    } } });
    expect(next.styles).toEqual({ "--color-background-primary": "#101010", "--font-sans": "Söhne, system-ui, sans-serif" });
    expect(mergeContext(next, { theme: "dark" }).styles).toEqual(next.styles); // kept until the host sends others
  });

  it("keeps what an update does not mention and drops invalid values", () => {
    const next = mergeContext(DEFAULT_CONTEXT, { theme: "sepia", displayMode: "fullscreen", availableDisplayModes: ["tv"] });
    expect(next.theme).toBe(DEFAULT_CONTEXT.theme);
    expect(next.displayMode).toBe("fullscreen");
    expect(next.availableDisplayModes).toEqual(DEFAULT_CONTEXT.availableDisplayModes);
  });
});

describe("router", () => {
  it("pushes an absolute URL of this document: a relative '#...' would resolve against the parent in srcdoc frames", async () => {
    const { navigate, currentRoute } = await import("../src/bridge/router");
    const push = vi.spyOn(history, "pushState");
    navigate("/animal/lion");
    const url = String(push.mock.calls[0][2]);
    expect(url).toBe(`${window.location.href.split("#")[0]}#/animal/lion`);
    expect(currentRoute()).toBe("/animal/lion");
    push.mockRestore();
  });

  it("anchors the first entry at '#/' in place, so going back to it stays in the document", async () => {
    const { anchorInitialRoute, navigate } = await import("../src/bridge/router");
    history.replaceState(null, "", window.location.href.split("#")[0]);
    const push = vi.spyOn(history, "pushState");
    const replace = vi.spyOn(history, "replaceState");
    anchorInitialRoute();
    expect(push).not.toHaveBeenCalled();
    expect(window.location.hash).toBe("#/");
    navigate("/animal/lion");
    replace.mockClear();
    anchorInitialRoute();
    expect(replace).not.toHaveBeenCalled();
    expect(window.location.hash).toBe("#/animal/lion");
    push.mockRestore();
    replace.mockRestore();
  });
});

describe("what a widget shows of a result's words", () => {
  it("shows the block written for the person, never the model's advice", () => {
    const failed = {
      isError: true,
      content: [
        { type: "text", text: "Advice first", annotations: { audience: ["assistant"] } },
        {
          type: "text",
          text: "The file is gone.",
          annotations: { audience: ["user", "assistant"] },
        },
      ],
    };
    expect(resultText(failed)).toBe("The file is gone.");
    expect(resultText({ content: [{ type: "text", text: "plain" }] })).toBe("plain");
    const advice = { type: "text", text: "Call x.", annotations: { audience: ["assistant"] } };
    const onlyAdvice = { content: [advice] };
    expect(resultText(onlyAdvice)).toBe("");
  });
});
