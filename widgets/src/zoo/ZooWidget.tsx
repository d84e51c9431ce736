// Zoo: cards from structuredContent, details from _meta.allAnimalsById (instant) refreshed by the
// app-only tool get_zoo_animal_details, likes through like_zoo_animal, a route per animal
// (#/animal/<id>) so the host's back button returns to the cards, and a full-screen mode.
import { useEffect, useRef, useState } from "preact/hooks";
import { match, navigate, resultText, useBridge, useRoute, useSnapshot } from "../bridge";
import { COMMON, tr } from "../ui/i18n";
import { Frame, useResultState } from "../ui/mount";
import { COLOURS, categoryName, categoryOf } from "./iucn";
import { pictureOf } from "./pictures";

interface Animal {
  id: string;
  name: string;
  species: string;
}

interface Details extends Animal {
  scientific_name: string;
  habitat: string;
  diet: string;
  conservation_status: string;
  lifespan_years: number;
  weight_kg: number;
  fun_fact: string;
  enclosure: string;
  likes: number;
}

interface ZooState {
  liked: string[];
}

const TEXT = {
  en: {
    title: "Zoo animals",
    picture: "Illustration: {species}",
    empty: "No animals to show.",
    habitat: "Habitat",
    diet: "Diet",
    status: "Conservation",
    lifespan: "Lifespan",
    weight: "Weight",
    enclosure: "Enclosure",
    years: "{n} years",
    like: "Like",
    liked: "Liked",
    likes: "{n} likes",
    unknown: "This animal is not in the list.",
  },
  fr: {
    title: "Animaux du zoo",
    picture: "Illustration : {species}",
    empty: "Aucun animal à afficher.",
    habitat: "Habitat",
    diet: "Régime",
    status: "Conservation",
    lifespan: "Longévité",
    weight: "Poids",
    enclosure: "Enclos",
    years: "{n} ans",
    like: "J’aime",
    liked: "Aimé",
    likes: "{n} j’aime",
    unknown: "Cet animal n’est pas dans la liste.",
  },
  es: {
    title: "Animales del zoo",
    picture: "Ilustración: {species}",
    empty: "No hay animales para mostrar.",
    habitat: "Hábitat",
    diet: "Dieta",
    status: "Conservación",
    lifespan: "Esperanza de vida",
    weight: "Peso",
    enclosure: "Recinto",
    years: "{n} años",
    like: "Me gusta",
    liked: "Te gusta",
    likes: "{n} me gusta",
    unknown: "Este animal no está en la lista.",
  },
  pt: {
    title: "Animais do zoológico",
    picture: "Ilustração: {species}",
    empty: "Nenhum animal para mostrar.",
    habitat: "Hábitat",
    diet: "Dieta",
    status: "Conservação",
    lifespan: "Expectativa de vida",
    weight: "Peso",
    enclosure: "Recinto",
    years: "{n} anos",
    like: "Curtir",
    liked: "Curtido",
    likes: "{n} curtidas",
    unknown: "Este animal não está na lista.",
  },
  zh: {
    title: "动物园的动物",
    picture: "插图：{species}",
    empty: "没有可显示的动物。",
    habitat: "栖息地",
    diet: "食性",
    status: "保护状况",
    lifespan: "寿命",
    weight: "体重",
    enclosure: "展区",
    years: "{n} 年",
    like: "点赞",
    liked: "已赞",
    likes: "{n} 个赞",
    unknown: "这只动物不在列表中。",
  },
};

export function ZooWidget() {
  const bridge = useBridge();
  const snap = useSnapshot();
  const route = useRoute();
  const { state, message } = useResultState();
  const t = tr(TEXT, snap.context.locale);
  const common = tr(COMMON, snap.context.locale);
  const animals = ((snap.result?.structuredContent?.animals as Animal[] | undefined) ?? []).filter((a) => a && a.id);
  const byId = (snap.result?._meta?.allAnimalsById as Record<string, Details> | undefined) ?? {};
  const liked = new Set(((snap.widgetState?.privateContent as ZooState | undefined)?.liked) ?? []);
  const selected = match("/animal/:id", route)?.id ?? null;
  const fullscreen = snap.context.displayMode === "fullscreen";
  const canFullscreen = bridge.canRequestDisplayMode(fullscreen ? "inline" : "fullscreen");

  async function like(animal: Details) {
    const result = await bridge.callTool("like_zoo_animal", { animal_id: animal.id });
    if (result.isError) throw new Error(resultText(result));
    const next = [...new Set([...liked, animal.id])];
    await bridge.setWidgetState({
      modelContent: { likedAnimals: animals.filter((a) => next.includes(a.id)).map((a) => a.name) },
      privateContent: { liked: next },
    });
    bridge.log("zoo.like", "info", { animal_id: animal.id });
    return (result.structuredContent?.likes as number | undefined) ?? animal.likes + 1;
  }

  const actions = canFullscreen ? (
    <button class="btn" data-testid="fullscreen" onClick={() =>
      bridge.requestDisplayMode(fullscreen ? "inline" : "fullscreen").catch((err: Error) =>
        bridge.log("zoo.display_mode_refused", "warning", undefined, err.message))}>
      {fullscreen ? common("exitFullscreen") : common("fullscreen")}
    </button>
  ) : null;

  const shown = state === "ready" && animals.length === 0 ? "empty" : state;
  return (
    <Frame name="zoo" state={shown} message={message} title={t("title")} actions={actions}
      announce={shown === "empty" ? t("empty") : undefined}>
      {shown === "empty" && <p class="state" data-testid="empty">{t("empty")}</p>}
      {shown === "ready" && selected === null && (
        <div class="grid" data-testid="animal-list">
          {animals.map((a) => (
            <button
              class="card"
              key={a.id}
              data-testid="animal-card"
              data-animal-id={a.id}
              onClick={() => {
                navigate(`/animal/${encodeURIComponent(a.id)}`);
                bridge.log("zoo.open", "info", { animal_id: a.id });
              }}
            >
              <Picture
                scientificName={byId[a.id]?.scientific_name}
                label={t("picture", { species: a.species })}
              />
              <h2>
                {a.name} {liked.has(a.id) ? "♥" : ""}
              </h2>
              <span class="muted">{a.species}</span>{" "}
              <Iucn status={byId[a.id]?.conservation_status} locale={snap.context.locale} />
            </button>
          ))}
        </div>
      )}
      {shown === "ready" && selected !== null && (
        <AnimalPage
          key={selected}
          id={selected}
          known={byId[selected] ?? animals.find((a) => a.id === selected) ?? null}
          liked={liked.has(selected)}
          onLike={like}
          locale={snap.context.locale}
          t={t}
          common={common}
        />
      )}
    </Frame>
  );
}

function formatKg(kg: number, locale: string): string {
  try {
    return new Intl.NumberFormat(locale, { style: "unit", unit: "kilogram", maximumFractionDigits: 1 }).format(kg);
  } catch {
    return `${kg} kg`;
  }
}

function AnimalPage(props: {
  locale: string;
  id: string;
  known: Partial<Details> | null;
  liked: boolean;
  onLike: (a: Details) => Promise<number>;
  t: ReturnType<typeof tr<keyof (typeof TEXT)["en"]>>;
  common: ReturnType<typeof tr<keyof (typeof COMMON)["en"]>>;
}) {
  const bridge = useBridge();
  const [details, setDetails] = useState<Partial<Details> | null>(props.known);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  // A like answered before the details call returns knows the newer count: keep it.
  const likedHere = useRef(false);
  const { t, common } = props;

  useEffect(() => {
    let live = true;
    // The hidden _meta already has the record; the app-only tool brings the current like count.
    bridge
      .callTool("get_zoo_animal_details", { animal_id: props.id })
      .then((result) => {
        if (!live) return;
        if (result.isError) setError(resultText(result) || common("error"));
        else {
          const fetched = (result.structuredContent?.animal as Details) ?? null;
          setDetails((prev) => (fetched && likedHere.current && prev?.likes != null ? { ...fetched, likes: prev.likes } : fetched));
          // The animal the person opened: what they will ask about next.
          if (fetched?.name) {
            void bridge
              .tellModel(`The user is looking at ${fetched.name}, the ${String(fetched.species ?? "animal").toLowerCase()} (id ${props.id}).`, {
                title: fetched.name,
              })
              .catch((err: Error) => bridge.log("zoo.context_failed", "warning", { animal_id: props.id }, err.message));
          }
        }
      })
      .catch((err: Error) => live && setError(err.message));
    return () => {
      live = false;
    };
  }, [props.id]);

  if (!details && !error) return <p class="state" data-testid="loading">{common("loading")}</p>;
  return (
    <article class="card" data-testid="animal-details" data-animal-id={props.id}>
      <div class="row">
        <button class="link" data-testid="back" onClick={() => history.back()}>
          ← {common("back")}
        </button>
      </div>
      {details ? (
        <>
          {details.species && (
            <Picture
              scientificName={details.scientific_name}
              label={t("picture", { species: details.species })}
              large
            />
          )}
          <h2 data-testid="animal-name">{details.name}</h2>
          <p class="muted">
            {details.species}
            {details.scientific_name ? <i> · {details.scientific_name}</i> : null}
          </p>
          <dl class="kv">
            {details.habitat && (<><dt>{t("habitat")}</dt><dd>{details.habitat}</dd></>)}
            {details.diet && (<><dt>{t("diet")}</dt><dd>{details.diet}</dd></>)}
            {details.conservation_status && (
              <>
                <dt>{t("status")}</dt>
                <dd>
                  <Iucn status={details.conservation_status} locale={props.locale} named />
                </dd>
              </>
            )}
            {details.lifespan_years != null && (<><dt>{t("lifespan")}</dt><dd>{t("years", { n: details.lifespan_years })}</dd></>)}
            {details.weight_kg != null && (<><dt>{t("weight")}</dt><dd>{formatKg(details.weight_kg, props.locale)}</dd></>)}
            {details.enclosure && (<><dt>{t("enclosure")}</dt><dd>{details.enclosure}</dd></>)}
          </dl>
          {details.fun_fact && <p data-testid="fun-fact">{details.fun_fact}</p>}
          <div class="row">
            <button
              class="btn primary"
              data-testid="like"
              disabled={busy}
              onClick={async () => {
                setBusy(true);
                try {
                  const likes = await props.onLike(details as Details);
                  likedHere.current = true;
                  setDetails((prev) => ({ ...prev, likes }));
                } catch (err) {
                  setError((err as Error).message || common("error"));
                } finally {
                  setBusy(false);
                }
              }}
            >
              {props.liked ? `♥ ${t("liked")}` : `♡ ${t("like")}`}
            </button>
            {details.likes != null && <span class="muted" data-testid="likes">{t("likes", { n: details.likes })}</span>}
          </div>
        </>
      ) : null}
      {error && <p class="state error" data-testid="error">{error}</p>}
    </article>
  );
}

/** The IUCN Red List badge: its code in the list's colours, its name for whoever cannot see them
 *  (and beside it, on the animal's page). Nothing for a status the list does not name. */
function Iucn(props: { status: unknown; locale: string; named?: boolean }) {
  const code = categoryOf(props.status);
  if (!code) return props.named && typeof props.status === "string" ? <>{props.status}</> : null;
  const name = categoryName(code, props.locale);
  const { bg, fg } = COLOURS[code];
  return (
    <>
      <span class="z-iucn" data-testid="iucn" data-code={code} title={name} style={{ background: bg, color: fg }}>
        <span aria-hidden="true">{code}</span>
        {!props.named && <span class="sr">{name}</span>}
      </span>
      {props.named && <span> {name}</span>}
    </>
  );
}

/** The species' illustration (zoo/pictures.ts), named for a screen reader; nothing for a species
 *  the zoo has no picture of. */
/** A species' drawing, found by its scientific name (the species' own name is in the person's
 * language, which the drawings do not depend on). */
function Picture(props: { scientificName?: string | null; label: string; large?: boolean }) {
  const body = pictureOf(props.scientificName);
  if (!body) return null;
  return (
    <svg
      class={`z-pic${props.large ? " z-pic-large" : ""}`}
      viewBox="0 0 64 64"
      role="img"
      aria-label={props.label}
      data-testid="animal-picture"
      data-scientific-name={props.scientificName ?? ""}
      dangerouslySetInnerHTML={{ __html: body }}
    />
  );
}
