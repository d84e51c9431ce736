// A widget's strings in the languages the server's features ship (en, fr, es, pt, zh).
// Lookup follows the host locale: "pt-BR" -> "pt", anything unknown -> "en".
export type Catalog<K extends string> = Record<"en", Record<K, string>> & Partial<Record<string, Partial<Record<K, string>>>>;

export function language(locale: string, supported: readonly string[] = ["en", "fr", "es", "pt", "zh"]): string {
  const tag = (locale || "en").toLowerCase().replace("_", "-");
  if (supported.includes(tag)) return tag;
  const primary = tag.split("-")[0];
  return supported.includes(primary) ? primary : "en";
}

/** `tr(catalog, locale)("key", {n: 3})`: the string in the locale's language, English when missing. */
export function tr<K extends string>(catalog: Catalog<K>, locale: string) {
  const lang = language(locale, Object.keys(catalog));
  return (key: K, vars: Record<string, string | number> = {}): string => {
    const text = catalog[lang]?.[key] ?? catalog.en[key] ?? key;
    return text.replace(/\{(\w+)\}/g, (_, name: string) => String(vars[name] ?? `{${name}}`));
  };
}

export const COMMON = {
  en: {
    loading: "Loading…",
    waiting: "Waiting for the tool result…",
    signedOut: "Connect your account to see this.",
    signIn: "Sign in",
    error: "Something went wrong.",
    retry: "Try again",
    cancelled: "The request was cancelled.",
    back: "Back",
    fullscreen: "Full screen",
    exitFullscreen: "Exit full screen",
  },
  fr: {
    loading: "Chargement…",
    waiting: "En attente du résultat…",
    signedOut: "Connectez votre compte pour voir ceci.",
    signIn: "Se connecter",
    error: "Une erreur s’est produite.",
    retry: "Réessayer",
    cancelled: "La demande a été annulée.",
    back: "Retour",
    fullscreen: "Plein écran",
    exitFullscreen: "Quitter le plein écran",
  },
  es: {
    loading: "Cargando…",
    waiting: "Esperando el resultado…",
    signedOut: "Conecta tu cuenta para ver esto.",
    signIn: "Iniciar sesión",
    error: "Algo salió mal.",
    retry: "Reintentar",
    cancelled: "La solicitud se canceló.",
    back: "Atrás",
    fullscreen: "Pantalla completa",
    exitFullscreen: "Salir de pantalla completa",
  },
  pt: {
    loading: "Carregando…",
    waiting: "Aguardando o resultado…",
    signedOut: "Conecte sua conta para ver isto.",
    signIn: "Entrar",
    error: "Algo deu errado.",
    retry: "Tentar de novo",
    cancelled: "A solicitação foi cancelada.",
    back: "Voltar",
    fullscreen: "Tela cheia",
    exitFullscreen: "Sair da tela cheia",
  },
  zh: {
    loading: "加载中…",
    waiting: "正在等待工具结果…",
    signedOut: "连接你的账户后即可查看。",
    signIn: "登录",
    error: "出了点问题。",
    retry: "重试",
    cancelled: "请求已取消。",
    back: "返回",
    fullscreen: "全屏",
    exitFullscreen: "退出全屏",
  },
} satisfies Catalog<string>;
