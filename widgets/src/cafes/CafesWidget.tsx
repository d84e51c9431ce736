// Cafés: the recommended cafés of structuredContent ({city, cafes: [{name, address}]}) as cards,
// completed by the widget-only `_meta.cafesById` (neighbourhood, since, specialty, map_url, lat,
// lon) matched by name, and a map of them from the tiles `_meta.map` names. The map and the list
// move together: a pin picks its card, a card's "Select" lights its pin. "Open map" opens
// OpenStreetMap outside the widget; favourites live in widget state (the model sees names, the
// widget keeps ids) and are shown again after a re-mount.
import { useEffect, useMemo, useState } from "preact/hooks";
import { useBridge, useSnapshot } from "../bridge";
import { tr } from "../ui/i18n";
import { Frame, useResultState } from "../ui/mount";
import { CafeMap, mapKey } from "./CafeMap";
import {
  detailsByName,
  favouriteKey,
  isFavourite,
  mapUrl,
  pickLanguage,
  pinsOf,
  readCafes,
  readFavourites,
  readMap,
  setFavourite,
  type Cafe,
  type CafeDetails,
} from "./logic";
import "./cafes.css";

const TEXT = {
  en: {
    title: "Cafés",
    heading: "Cafés in {city}",
    empty: "No cafés to show.",
    since: "since {year}",
    openMap: "Open map",
    favourite: "Favourite",
    select: "Select",
    mapFailed: "Could not open the map.",
    saveFailed: "Could not save your favourites.",
    mapLabel: "Map of the cafés in {city}",
    mapLabelNoCity: "Map of the cafés",
    mapUnavailable: "The map could not be loaded; every café is listed below.",
    zoomIn: "Zoom in",
    zoomOut: "Zoom out",
  },
  fr: {
    title: "Cafés",
    heading: "Cafés à {city}",
    empty: "Aucun café à afficher.",
    since: "depuis {year}",
    openMap: "Ouvrir la carte",
    favourite: "Favori",
    select: "Sélectionner",
    mapFailed: "Impossible d’ouvrir la carte.",
    saveFailed: "Impossible d’enregistrer vos favoris.",
    mapLabel: "Carte des cafés à {city}",
    mapLabelNoCity: "Carte des cafés",
    mapUnavailable: "La carte n’a pas pu être chargée ; tous les cafés sont listés ci-dessous.",
    zoomIn: "Zoomer",
    zoomOut: "Dézoomer",
  },
  es: {
    title: "Cafeterías",
    heading: "Cafeterías en {city}",
    empty: "No hay cafeterías que mostrar.",
    since: "desde {year}",
    openMap: "Abrir mapa",
    favourite: "Favorito",
    select: "Seleccionar",
    mapFailed: "No se pudo abrir el mapa.",
    saveFailed: "No se pudieron guardar tus favoritos.",
    mapLabel: "Mapa de las cafeterías en {city}",
    mapLabelNoCity: "Mapa de las cafeterías",
    mapUnavailable: "No se pudo cargar el mapa; todas las cafeterías están en la lista de abajo.",
    zoomIn: "Acercar",
    zoomOut: "Alejar",
  },
  pt: {
    title: "Cafés",
    heading: "Cafés em {city}",
    empty: "Nenhum café para mostrar.",
    since: "desde {year}",
    openMap: "Abrir mapa",
    favourite: "Favorito",
    select: "Selecionar",
    mapFailed: "Não foi possível abrir o mapa.",
    saveFailed: "Não foi possível salvar seus favoritos.",
    mapLabel: "Mapa dos cafés em {city}",
    mapLabelNoCity: "Mapa dos cafés",
    mapUnavailable: "Não foi possível carregar o mapa; todos os cafés estão listados abaixo.",
    zoomIn: "Aproximar",
    zoomOut: "Afastar",
  },
  zh: {
    title: "咖啡馆",
    heading: "{city}的咖啡馆",
    empty: "没有可显示的咖啡馆。",
    since: "始于 {year} 年",
    openMap: "打开地图",
    favourite: "收藏",
    select: "选择",
    mapFailed: "无法打开地图。",
    saveFailed: "无法保存你的收藏。",
    mapLabel: "{city}咖啡馆地图",
    mapLabelNoCity: "咖啡馆地图",
    mapUnavailable: "地图无法加载；所有咖啡馆都列在下方。",
    zoomIn: "放大",
    zoomOut: "缩小",
  },
};

export function CafesWidget() {
  const bridge = useBridge();
  const snap = useSnapshot();
  const { state, message } = useResultState();
  const [notice, setNotice] = useState("");
  const [selected, setSelected] = useState<string | null>(null);
  const meta = snap.result?._meta;
  const lang = pickLanguage(snap.context.locale, meta?.locale);
  const t = tr(TEXT, lang);
  const structured = snap.result?.structuredContent;
  // The city as the answer's language writes it (`_meta.cityName`), else its English name.
  const english = typeof structured?.city === "string" ? structured.city.trim() : "";
  const named = typeof meta?.cityName === "string" ? meta.cityName.trim() : "";
  const city = named || english;
  const cafes = readCafes(structured);
  const byName = detailsByName(meta?.cafesById);
  const saved = readFavourites(snap.widgetState?.privateContent);
  const source = readMap(meta?.map);
  const pins = useMemo(() => pinsOf(cafes, byName), [structured, meta?.cafesById]);
  const [tilesFailed, setTilesFailed] = useState(false);
  // Another map (other tiles, other cafés) is tried afresh.
  const shownKey = source ? mapKey(source, pins) : "";
  useEffect(() => setTilesFailed(false), [shownKey]);
  const showMap = source !== null && pins.length > 0 && !tilesFailed;
  const numbers = new Map(pins.map((p) => [p.name, p.number]));

  /** A pin was picked: its café is selected, as its card's button would, and its card shown. */
  function pick(id: string) {
    const cafe = cafes.find((c) => byName.get(c.name)?.id === id);
    if (!cafe) return;
    void select(cafe, byName.get(cafe.name));
    const card = document.querySelector(`[data-testid="cafe-card"][data-cafe-id="${CSS.escape(id)}"]`);
    card?.scrollIntoView({ block: "nearest" });
  }

  async function openMap(cafe: Cafe, detail: CafeDetails | undefined) {
    setNotice("");
    bridge.log("cafes.open_map", "info", { id: favouriteKey(cafe, detail) });
    try {
      await bridge.openLink(mapUrl(cafe, detail));
    } catch (err) {
      setNotice(t("mapFailed"));
      bridge.log("cafes.open_map_failed", "warning", { id: favouriteKey(cafe, detail) }, String((err as Error)?.message ?? err));
    }
  }

  async function openAttribution(url: string) {
    try {
      await bridge.openLink(url);
    } catch (err) {
      const reason = String((err as Error)?.message ?? err);
      bridge.log("cafes.open_attribution_failed", "warning", {}, reason);
    }
  }

  /** The person's pick, told to the model (what they will ask about next). */
  async function select(cafe: Cafe, detail: CafeDetails | undefined) {
    setSelected(cafe.name);
    const where = [cafe.address || detail?.address, detail?.neighborhood, city].filter(Boolean).join(", ");
    bridge.log("cafes.select", "info", { id: favouriteKey(cafe, detail) });
    try {
      await bridge.tellModel(`The user selected the café ${cafe.name}${where ? ` (${where})` : ""}.`, {
        title: cafe.name,
      });
    } catch (err) {
      bridge.log("cafes.select_failed", "warning", { id: favouriteKey(cafe, detail) }, String((err as Error)?.message ?? err));
    }
  }

  async function toggleFavourite(cafe: Cafe, detail: CafeDetails | undefined, on: boolean) {
    setNotice("");
    const next = setFavourite(saved, cafe, detail, on);
    const names = cafes.filter((c) => isFavourite(next, c, byName.get(c.name))).map((c) => c.name);
    bridge.log("cafes.favourite", "info", { id: favouriteKey(cafe, detail), on });
    try {
      await bridge.setWidgetState({ modelContent: { favourites: names }, privateContent: { favourites: next } });
    } catch (err) {
      setNotice(t("saveFailed"));
      bridge.log("cafes.favourite_failed", "warning", { id: favouriteKey(cafe, detail) }, String((err as Error)?.message ?? err));
    }
  }

  const shown = state === "ready" && cafes.length === 0 ? "empty" : state;
  const title = (
    <span data-testid="cafes-heading" data-city={english}>
      {city ? t("heading", { city }) : t("title")}
    </span>
  );
  return (
    <Frame name="cafes" state={shown} message={message} title={title}
      announce={city ? t("heading", { city }) : t("title")}>
      {shown === "empty" && (
        <p class="state" data-testid="empty">
          {t("empty")}
        </p>
      )}
      {shown === "ready" && (
        <div lang={lang} class={showMap ? "c-body has-map" : "c-body"}>
          {notice && (
            <p class="c-notice" role="alert" data-testid="action-error">
              {notice}
            </p>
          )}
          {showMap && source && (
            <div class="c-figure">
              <CafeMap
                source={source}
                pins={pins}
                selected={selected ? byName.get(selected)?.id ?? null : null}
                label={city ? t("mapLabel", { city }) : t("mapLabelNoCity")}
                zoomIn={t("zoomIn")}
                zoomOut={t("zoomOut")}
                onPick={pick}
                onTilesFailed={() => {
                  setTilesFailed(true);
                  bridge.log("cafes.tiles_failed", "warning", { tiles: source.origin });
                }}
              />
              {source.attribution && (
                <p class="c-attr" data-testid="map-attribution">
                  {source.attributionUrl ? (
                    <button
                      class="link"
                      type="button"
                      onClick={() => void openAttribution(source.attributionUrl!)}
                    >
                      {source.attribution}
                    </button>
                  ) : (
                    source.attribution
                  )}
                </p>
              )}
            </div>
          )}
          {tilesFailed && (
            <p class="c-map-note" role="status" data-testid="map-unavailable">
              {t("mapUnavailable")}
            </p>
          )}
          <ul class="list" data-testid="cafe-list">
            {cafes.map((cafe) => {
              const detail = byName.get(cafe.name);
              const fav = isFavourite(saved, cafe, detail);
              const address = cafe.address || detail?.address || "";
              return (
                <li
                  key={cafe.name}
                  class={`card c-card${fav ? " is-favourite" : ""}${selected === cafe.name ? " is-selected" : ""}`}
                  data-testid="cafe-card"
                  data-cafe-id={detail?.id ?? ""}
                  data-cafe-name={cafe.name}
                  data-favourite={fav ? "true" : "false"}
                >
                  <div class="c-title">
                    {numbers.has(cafe.name) && (
                      <span class="c-num" aria-hidden="true" data-testid="cafe-number">
                        {numbers.get(cafe.name)}
                      </span>
                    )}
                    <h2 data-testid="cafe-name">{cafe.name}</h2>
                  </div>
                  {detail?.neighborhood && (
                    <p class="c-meta" data-testid="cafe-neighborhood">
                      {detail.neighborhood}
                    </p>
                  )}
                  {address && <p data-testid="cafe-address">{address}</p>}
                  {typeof detail?.since === "number" && (
                    <p class="c-meta" data-testid="cafe-since">
                      {t("since", { year: String(detail.since) })}
                    </p>
                  )}
                  {detail?.specialty && (
                    <p class="c-specialty" data-testid="cafe-specialty">
                      {detail.specialty}
                    </p>
                  )}
                  <div class="c-actions">
                    <button
                      class="btn"
                      type="button"
                      aria-pressed={selected === cafe.name}
                      data-testid="cafe-select"
                      onClick={() => void select(cafe, detail)}
                    >
                      {t("select")}
                    </button>
                    <button
                      class="btn c-fav"
                      type="button"
                      aria-pressed={fav}
                      data-testid="cafe-favourite"
                      onClick={() => void toggleFavourite(cafe, detail, !fav)}
                    >
                      <span aria-hidden="true">{fav ? "★" : "☆"}</span> {t("favourite")}
                    </button>
                    <button class="btn primary" type="button" data-testid="cafe-map" onClick={() => void openMap(cafe, detail)}>
                      {t("openMap")}
                    </button>
                  </div>
                </li>
              );
            })}
          </ul>
        </div>
      )}
    </Frame>
  );
}
