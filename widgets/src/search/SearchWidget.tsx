// Search: the query (tool input, may arrive late or never) and the ranked documentation pages of
// structuredContent.results. A title opens the page outside the widget (bridge.openLink: ChatGPT's
// openExternal), "Ask about this" sends a follow-up, and the last opened result is kept in widget
// state (model sees the title, the widget keeps the id) so its row stays marked after a re-mount.
import { useState } from "preact/hooks";
import { useBridge, useSnapshot } from "../bridge";
import { tr } from "../ui/i18n";
import { Frame, useResultState } from "../ui/mount";
import { highlight, linkOrigins, openableUrl, queryWords, readHits, readQuery, urlHost, type Hit } from "./logic";
import "./search.css";

interface SearchState {
  lastOpened?: string;
}

const TEXT = {
  en: {
    title: "Search results",
    resultsFor: "Results for “{q}”",
    empty: "No results for “{q}”",
    emptyNoQuery: "No results.",
    count: "{n} results",
    countOne: "1 result",
    ask: "Ask about this",
    followUp: "Tell me more about {title}",
    visited: "Visited",
    openFailed: "Could not open the link.",
    askFailed: "Could not send the message.",
  },
  fr: {
    title: "Résultats de recherche",
    resultsFor: "Résultats pour « {q} »",
    empty: "Aucun résultat pour « {q} »",
    emptyNoQuery: "Aucun résultat.",
    count: "{n} résultats",
    countOne: "1 résultat",
    ask: "En savoir plus",
    followUp: "Dis-m’en plus sur {title}",
    visited: "Consulté",
    openFailed: "Impossible d’ouvrir le lien.",
    askFailed: "Impossible d’envoyer le message.",
  },
  es: {
    title: "Resultados de búsqueda",
    resultsFor: "Resultados para “{q}”",
    empty: "No hay resultados para “{q}”",
    emptyNoQuery: "No hay resultados.",
    count: "{n} resultados",
    countOne: "1 resultado",
    ask: "Preguntar sobre esto",
    followUp: "Cuéntame más sobre {title}",
    visited: "Visitado",
    openFailed: "No se pudo abrir el enlace.",
    askFailed: "No se pudo enviar el mensaje.",
  },
  pt: {
    title: "Resultados da pesquisa",
    resultsFor: "Resultados para “{q}”",
    empty: "Nenhum resultado para “{q}”",
    emptyNoQuery: "Nenhum resultado.",
    count: "{n} resultados",
    countOne: "1 resultado",
    ask: "Perguntar sobre isto",
    followUp: "Conte-me mais sobre {title}",
    visited: "Visitado",
    openFailed: "Não foi possível abrir o link.",
    askFailed: "Não foi possível enviar a mensagem.",
  },
  zh: {
    title: "搜索结果",
    resultsFor: "“{q}”的搜索结果",
    empty: "没有找到“{q}”的结果",
    emptyNoQuery: "没有结果。",
    count: "{n} 个结果",
    countOne: "1 个结果",
    ask: "询问详情",
    followUp: "详细介绍一下 {title}",
    visited: "已访问",
    openFailed: "无法打开链接。",
    askFailed: "无法发送消息。",
  },
};

export function SearchWidget() {
  const bridge = useBridge();
  const snap = useSnapshot();
  const { state, message } = useResultState();
  const [notice, setNotice] = useState("");
  const t = tr(TEXT, snap.context.locale);
  const q = readQuery(snap.input);
  const hits = readHits(snap.result?.structuredContent);
  const words = queryWords(q);
  const origins = linkOrigins(snap.result?._meta);
  const lastOpened = (snap.widgetState?.privateContent as SearchState | undefined)?.lastOpened ?? null;

  async function open(hit: Hit, href: string) {
    setNotice("");
    bridge.log("search.open", "info", { id: hit.id });
    // State first: the row is marked at once, and the mark survives even if the host refuses the link.
    bridge
      .setWidgetState({ modelContent: { lastOpened: hit.title }, privateContent: { lastOpened: hit.id } })
      .catch(() => undefined)
      // The page the person picked, as an attachment the model reads with the next message.
      .then(() => bridge.tellModel(`The user opened the result "${hit.title}" (${href}).`, { title: hit.title }))
      .catch((err: Error) => bridge.log("search.context_failed", "warning", { id: hit.id }, err.message));
    try {
      await bridge.openLink(href);
    } catch (err) {
      setNotice(t("openFailed"));
      bridge.log("search.open_failed", "warning", { id: hit.id }, String((err as Error)?.message ?? err));
    }
  }

  async function ask(hit: Hit) {
    setNotice("");
    bridge.log("search.ask", "info", { id: hit.id });
    try {
      await bridge.sendFollowUp(t("followUp", { title: hit.title }));
    } catch (err) {
      setNotice(t("askFailed"));
      bridge.log("search.ask_failed", "warning", { id: hit.id }, String((err as Error)?.message ?? err));
    }
  }

  const shown = state === "ready" && hits.length === 0 ? "empty" : state;
  const title = (
    <span data-testid="search-query" data-query={q}>
      {q ? t("resultsFor", { q }) : t("title")}
    </span>
  );
  return (
    <Frame
      name="search"
      state={shown}
      message={message}
      title={title}
      announce={
        shown === "empty"
          ? q ? t("empty", { q }) : t("emptyNoQuery")
          : q ? t("resultsFor", { q }) : t("title")
      }
    >
      {shown === "empty" && (
        <p class="state" data-testid="empty">
          {q ? t("empty", { q }) : t("emptyNoQuery")}
        </p>
      )}
      {shown === "ready" && (
        <>
          <p class="muted" data-testid="search-count">
            {hits.length === 1 ? t("countOne") : t("count", { n: hits.length })}
          </p>
          {notice && (
            <p class="s-notice" role="alert" data-testid="action-error">
              {notice}
            </p>
          )}
          <ul class="list" data-testid="search-results">
            {hits.map((hit) => {
              const href = openableUrl(hit.url, origins);
              const visited = hit.id === lastOpened;
              return (
                <li
                  key={hit.id}
                  class={`card s-row${visited ? " is-visited" : ""}`}
                  data-testid="search-result"
                  data-result-id={hit.id}
                  data-visited={visited ? "true" : "false"}
                >
                  <div class="row">
                    <h2 class="grow">
                      {href ? (
                        <a
                          class="s-title"
                          href={href}
                          data-testid="search-result-link"
                          onClick={(ev) => {
                            ev.preventDefault();
                            void open(hit, href);
                          }}
                        >
                          <Marked text={hit.title} words={words} />
                        </a>
                      ) : (
                        <span data-testid="search-result-title">
                          <Marked text={hit.title} words={words} />
                        </span>
                      )}
                    </h2>
                    {visited && (
                      <span class="s-badge" data-testid="search-result-visited">
                        {t("visited")}
                      </span>
                    )}
                  </div>
                  {urlHost(hit.url) && (
                    <span class="muted ellipsis" data-testid="search-result-host">
                      {urlHost(hit.url)}
                    </span>
                  )}
                  {hit.snippet && (
                    <p class="s-snippet" data-testid="search-result-snippet">
                      <Marked text={hit.snippet} words={words} />
                    </p>
                  )}
                  <div class="s-actions">
                    <button class="btn" type="button" data-testid="search-result-ask" onClick={() => void ask(hit)}>
                      {t("ask")}
                    </button>
                  </div>
                </li>
              );
            })}
          </ul>
        </>
      )}
    </Frame>
  );
}

/** The query's words marked where they occur: why a result matched. */
function Marked(props: { text: string; words: readonly string[] }) {
  return (
    <>
      {highlight(props.text, props.words).map((run, i) =>
        run.hit ? (
          <mark key={i} class="s-hit" data-testid="search-hit">
            {run.text}
          </mark>
        ) : (
          run.text
        ),
      )}
    </>
  );
}
