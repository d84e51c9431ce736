// The window.openai shim injected as the first script of a widget's HTML. It gives the widget
// ChatGPT's extension API over plain postMessage envelopes ({type: "openai-shim"}), which the
// MCP Apps transport ignores (it drops anything that is not JSON-RPC), so the two channels never
// mix. Globals arrive from the host; every change fires `openai:set_globals` like ChatGPT does.

export const SHIM_TYPE = "openai-shim";

export function shimScript(initial: Record<string, unknown>): string {
  const body = `(() => {
  const TYPE = ${JSON.stringify(SHIM_TYPE)};
  const pending = new Map();
  let seq = 0;
  const call = (method, args) => new Promise((resolve, reject) => {
    const id = ++seq;
    pending.set(id, { resolve, reject });
    window.parent.postMessage({ type: TYPE, id, method, args }, "*");
  });
  const openai = Object.assign(${JSON.stringify(initial).replace(/</g, "\\u003c")}, {
    callTool: (name, args) => call("callTool", { name, args: args || {} }),
    setWidgetState: (state) => { openai.widgetState = state; return call("setWidgetState", state); },
    sendFollowUpMessage: (args) => call("sendFollowUpMessage", args),
    requestDisplayMode: (args) => call("requestDisplayMode", args),
    requestModal: (args) => call("requestModal", args),
    requestClose: () => call("requestClose", {}),
    notifyIntrinsicHeight: (height) => { call("notifyIntrinsicHeight", { height }); },
    openExternal: (args) => call("openExternal", args),
    setOpenInAppUrl: (args) => call("setOpenInAppUrl", args),
    uploadFile: (file) => call("uploadFile", { file }),
    selectFiles: () => call("selectFiles", {}),
    getFileDownloadUrl: (args) => call("getFileDownloadUrl", args),
  });
  window.openai = openai;
  window.addEventListener("message", (ev) => {
    if (ev.source !== window.parent) return;
    const m = ev.data;
    if (!m || m.type !== TYPE) return;
    if (m.reply) {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(m.error)); else p.resolve(m.result);
    } else if (m.globals) {
      Object.assign(openai, m.globals);
      window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: m.globals } }));
    }
  });
})();`;
  return `<script>${body}</script>`;
}

/** The widget HTML with the shim as the first thing in <head> (or the document when it has none). */
export function injectShim(html: string, script: string): string {
  const head = /<head[^>]*>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + script + html.slice(head.index + head[0].length);
  return script + html;
}
