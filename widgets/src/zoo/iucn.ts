// IUCN Red List categories: the code, the list's own colours, the name in each language the
// widgets speak. The data names a status in English ("Endangered"); the badge shows its code.

export type Category = "LC" | "NT" | "VU" | "EN" | "CR" | "EW" | "EX" | "DD";

const BY_NAME: Record<string, Category> = {
  "least concern": "LC",
  "near threatened": "NT",
  vulnerable: "VU",
  endangered: "EN",
  "critically endangered": "CR",
  "extinct in the wild": "EW",
  extinct: "EX",
  "data deficient": "DD",
};

// The Red List's colours; the text on each is the one of the two (black, white) that contrasts.
export const COLOURS: Record<Category, { bg: string; fg: string }> = {
  LC: { bg: "#60c659", fg: "#000000" },
  NT: { bg: "#cce226", fg: "#000000" },
  VU: { bg: "#f9e814", fg: "#000000" },
  EN: { bg: "#fc7f3f", fg: "#000000" },
  CR: { bg: "#d81e05", fg: "#ffffff" },
  EW: { bg: "#542344", fg: "#ffffff" },
  EX: { bg: "#000000", fg: "#ffffff" },
  DD: { bg: "#d1d1c6", fg: "#000000" },
};

export const NAMES: Record<string, Record<Category, string>> = {
  en: { LC: "Least Concern", NT: "Near Threatened", VU: "Vulnerable", EN: "Endangered",
        CR: "Critically Endangered", EW: "Extinct in the Wild", EX: "Extinct", DD: "Data Deficient" },
  fr: { LC: "Préoccupation mineure", NT: "Quasi menacé", VU: "Vulnérable", EN: "En danger",
        CR: "En danger critique", EW: "Éteint à l’état sauvage", EX: "Éteint", DD: "Données insuffisantes" },
  es: { LC: "Preocupación menor", NT: "Casi amenazado", VU: "Vulnerable", EN: "En peligro",
        CR: "En peligro crítico", EW: "Extinto en estado silvestre", EX: "Extinto", DD: "Datos insuficientes" },
  pt: { LC: "Pouco preocupante", NT: "Quase ameaçado", VU: "Vulnerável", EN: "Em perigo",
        CR: "Criticamente em perigo", EW: "Extinto na natureza", EX: "Extinto", DD: "Dados insuficientes" },
  zh: { LC: "无危", NT: "近危", VU: "易危", EN: "濒危", CR: "极危", EW: "野外灭绝", EX: "灭绝", DD: "数据缺乏" },
};

/** The category a status names (English, any case), else null. */
export function categoryOf(status: unknown): Category | null {
  return typeof status === "string" ? (BY_NAME[status.trim().toLowerCase()] ?? null) : null;
}

/** The category's name in the language of `locale` (English when the widget does not speak it). */
export function categoryName(code: Category, locale: string): string {
  const language = locale.toLowerCase().split(/[-_]/)[0] ?? "en";
  return (NAMES[language] ?? NAMES.en!)[code];
}
