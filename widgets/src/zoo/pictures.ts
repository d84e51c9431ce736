// An illustration for each species of the zoo, drawn here as compact SVG (64 x 64): no photo host
// to reach from a widget, and no licence but this file's. Keyed by the species' scientific name
// (the data's `scientific_name`: the same in every language the widget speaks). Each is a
// background disc in the animal's habitat colour and a few shapes of the animal.

const disc = (fill: string) => `<circle cx="32" cy="32" r="31" fill="${fill}"/>`;
const eye = (x: number, y: number, r = 1.6) => `<circle cx="${x}" cy="${y}" r="${r}" fill="#111"/>`;

export const PICTURES: Record<string, string> = {
  "Aldabrachelys gigantea": // Aldabra giant tortoise
    disc("#d9e7c5") +
    `<ellipse cx="30" cy="36" rx="18" ry="12" fill="#6b5a3a"/><path d="M16 36h28M22 28l4 16M34 27l-2 17" stroke="#4a3d27" stroke-width="1.5"/>` +
    `<ellipse cx="50" cy="36" rx="7" ry="5" fill="#8a7a5a"/>${eye(52, 35)}<rect x="18" y="44" width="5" height="7" fill="#8a7a5a"/><rect x="36" y="44" width="5" height="7" fill="#8a7a5a"/>`,
  "Phoenicopterus ruber": // American flamingo
    disc("#cfe9f2") +
    `<ellipse cx="28" cy="30" rx="11" ry="8" fill="#f47a8f"/><path d="M37 28q8-14 4-18" stroke="#f47a8f" stroke-width="3" fill="none"/>` +
    `<path d="M41 10l6 3-5 2z" fill="#222"/>${eye(41, 11, 1)}<path d="M27 38v16M31 38l3 16" stroke="#e0607a" stroke-width="1.5"/>`,
  "Elephas maximus": // Asian elephant
    disc("#e4dcc8") +
    `<ellipse cx="30" cy="34" rx="17" ry="13" fill="#8d8f94"/><circle cx="44" cy="26" r="9" fill="#9a9ca1"/>` +
    `<path d="M50 30q4 10-2 18" stroke="#9a9ca1" stroke-width="4" fill="none"/><ellipse cx="40" cy="25" rx="4" ry="6" fill="#7d7f84"/>${eye(47, 24)}` +
    `<rect x="18" y="42" width="6" height="10" fill="#8d8f94"/><rect x="32" y="42" width="6" height="10" fill="#8d8f94"/>`,
  "Limulus polyphemus": // Atlantic horseshoe crab
    disc("#d6e4ea") +
    `<path d="M12 34q20-26 40 0z" fill="#6e5b44"/><path d="M16 34h32l-16 10z" fill="#5a4a37"/><path d="M32 44l2 14" stroke="#5a4a37" stroke-width="2"/>` +
    `${eye(24, 28, 1.3)}${eye(40, 28, 1.3)}`,
  "Ambystoma mexicanum": // Axolotl
    disc("#cde6e6") +
    `<ellipse cx="32" cy="36" rx="16" ry="7" fill="#f6b8c8"/><circle cx="18" cy="32" r="7" fill="#f6b8c8"/>` +
    `<path d="M13 26l-4-4M14 30l-6-1M15 34l-5 3M23 26l4-4" stroke="#e2728f" stroke-width="2"/><path d="M48 36q8-4 10 2-6 2-10-2" fill="#f6b8c8"/>${eye(17, 31, 1.2)}`,
  "Pongo pygmaeus": // Bornean orangutan
    disc("#cfe3c4") +
    `<circle cx="32" cy="30" r="14" fill="#c2612b"/><ellipse cx="32" cy="33" rx="8" ry="7" fill="#e6a77b"/>` +
    `${eye(29, 30)}${eye(35, 30)}<path d="M29 36q3 2 6 0" stroke="#6b3a1e" fill="none"/><path d="M18 40q-6 10 0 16M46 40q6 10 0 16" stroke="#c2612b" stroke-width="5" fill="none"/>`,
  "Alligator sinensis": // Chinese alligator
    disc("#d8e2c8") +
    `<path d="M8 36q16-8 40-4l10 4-10 3q-24 4-40-3z" fill="#4f5e3a"/><path d="M14 36h36" stroke="#3b4629" stroke-dasharray="3 2"/>` +
    `${eye(46, 33, 1.3)}<rect x="20" y="39" width="3" height="6" fill="#4f5e3a"/><rect x="36" y="38" width="3" height="6" fill="#4f5e3a"/>`,
  "Birgus latro": // Coconut crab
    disc("#f1e1c2") +
    `<ellipse cx="32" cy="36" rx="13" ry="9" fill="#5a4ea0"/><path d="M19 34l-8-6M45 34l8-6M21 40l-9 4M43 40l9 4" stroke="#5a4ea0" stroke-width="3"/>` +
    `<circle cx="12" cy="26" r="4" fill="#7c6fc4"/><circle cx="52" cy="26" r="4" fill="#7c6fc4"/>${eye(28, 30, 1.2)}${eye(36, 30, 1.2)}`,
  "Heloderma suspectum": // Gila monster
    disc("#efd9b4") +
    `<path d="M8 38q10-10 26-8t22 8q-10 4-22 3T8 38z" fill="#222"/><circle cx="18" cy="35" r="2.5" fill="#f08a3c"/><circle cx="28" cy="33" r="2.5" fill="#f08a3c"/>` +
    `<circle cx="38" cy="34" r="2.5" fill="#f08a3c"/><circle cx="24" cy="38" r="2" fill="#f4b26a"/>${eye(52, 36, 1.2)}`,
  "Giraffa camelopardalis": // Giraffe
    disc("#f3e6b9") +
    `<path d="M36 12l4 28h-8z" fill="#e8b04f"/><ellipse cx="30" cy="44" rx="12" ry="7" fill="#e8b04f"/><ellipse cx="40" cy="12" rx="6" ry="4" fill="#e8b04f"/>` +
    `<circle cx="35" cy="24" r="2" fill="#9b5e23"/><circle cx="26" cy="43" r="2.5" fill="#9b5e23"/><circle cx="34" cy="46" r="2" fill="#9b5e23"/><circle cx="37" cy="33" r="1.6" fill="#9b5e23"/>` +
    `${eye(42, 11, 1.1)}<path d="M38 8v-4M41 8v-4" stroke="#9b5e23" stroke-width="1.5"/>`,
  "Phyllobates terribilis": // Golden poison frog
    disc("#cfe7cf") +
    `<ellipse cx="32" cy="36" rx="14" ry="10" fill="#f2c318"/><circle cx="25" cy="27" r="4" fill="#f2c318"/><circle cx="39" cy="27" r="4" fill="#f2c318"/>` +
    `${eye(25, 27)}${eye(39, 27)}<path d="M18 42l-6 6M46 42l6 6" stroke="#d9a70a" stroke-width="3"/>`,
  "Phoca vitulina": // Harbor seal
    disc("#cde3f0") +
    `<path d="M10 42q6-18 26-16t20 14q-16 8-46 2z" fill="#8b8f93"/><circle cx="48" cy="32" r="7" fill="#9ea2a6"/>` +
    `${eye(50, 30)}<path d="M52 35l6-1M52 36l6 2" stroke="#555"/><circle cx="24" cy="36" r="1.3" fill="#6d7175"/><circle cx="30" cy="34" r="1.3" fill="#6d7175"/>`,
  "Nestor notabilis": // Kea
    disc("#d6e6d2") +
    `<ellipse cx="30" cy="34" rx="10" ry="14" fill="#5d7a35"/><circle cx="34" cy="20" r="7" fill="#6b8a3d"/>` +
    `<path d="M40 19q6 2 3 8" stroke="#444" stroke-width="2.5" fill="none"/>${eye(36, 18)}<path d="M24 42l-6 8" stroke="#e0672d" stroke-width="4"/>`,
  "Aptenodytes patagonicus": // King penguin
    disc("#dbe8f3") +
    `<ellipse cx="32" cy="36" rx="11" ry="18" fill="#1d2430"/><ellipse cx="32" cy="39" rx="7" ry="14" fill="#f4f4f4"/>` +
    `<path d="M27 24q5 6 10 0" stroke="#f3a21b" stroke-width="3" fill="none"/>${eye(29, 22)}<path d="M33 24l6 1" stroke="#f3a21b" stroke-width="2"/>`,
  "Phascolarctos cinereus": // Koala
    disc("#d7e6cf") +
    `<circle cx="32" cy="34" r="13" fill="#9aa0a6"/><circle cx="19" cy="24" r="6" fill="#9aa0a6"/><circle cx="45" cy="24" r="6" fill="#9aa0a6"/>` +
    `<circle cx="19" cy="24" r="3" fill="#e8e8e8"/><circle cx="45" cy="24" r="3" fill="#e8e8e8"/><ellipse cx="32" cy="36" rx="3.5" ry="5" fill="#333"/>${eye(27, 31)}${eye(37, 31)}`,
  "Varanus komodoensis": // Komodo dragon
    disc("#eadfc6") +
    `<path d="M6 40q14-12 30-8t22 6q-12 6-24 5T6 40z" fill="#6f6a4e"/><path d="M54 37l6 2-6 1" fill="#d6b23a"/>` +
    `${eye(50, 35, 1.2)}<rect x="22" y="41" width="3" height="7" fill="#6f6a4e"/><rect x="38" y="40" width="3" height="7" fill="#6f6a4e"/>`,
  "Choloepus didactylus": // Linnaeus's two-toed sloth
    disc("#d5e6c9") +
    `<path d="M8 16h48" stroke="#7a5a38" stroke-width="3"/><ellipse cx="32" cy="34" rx="12" ry="10" fill="#a98a63"/>` +
    `<path d="M22 30l-4-13M42 30l4-13" stroke="#a98a63" stroke-width="4"/><circle cx="32" cy="36" r="6" fill="#e3d0b0"/>${eye(30, 35, 1.2)}${eye(34, 35, 1.2)}`,
  "Panthera leo": // Lion
    disc("#f1e2b8") +
    `<circle cx="32" cy="32" r="16" fill="#b86b25"/><circle cx="32" cy="33" r="10" fill="#e2a84c"/>` +
    `${eye(28, 31)}${eye(36, 31)}<path d="M30 36h4l-2 2z" fill="#5a3412"/>`,
  "Dryococelus australis": // Lord Howe Island stick insect
    disc("#dfe8cf") +
    `<path d="M12 36h40" stroke="#3a2d22" stroke-width="4" stroke-linecap="round"/><path d="M20 36l-6 10M26 36l-2 12M34 36l2 12M40 36l6 10M20 36l-6-8M40 36l6-8" stroke="#3a2d22" stroke-width="1.5"/>` +
    `<path d="M52 36l8-4M52 36l8 2" stroke="#3a2d22"/>`,
  "Suricata suricatta": // Meerkat
    disc("#f3e4c2") +
    `<ellipse cx="32" cy="40" rx="7" ry="14" fill="#c8a878"/><ellipse cx="32" cy="22" rx="6" ry="7" fill="#c8a878"/>` +
    `<ellipse cx="30" cy="21" rx="2" ry="2.4" fill="#4a3a28"/><ellipse cx="34.5" cy="21" rx="2" ry="2.4" fill="#4a3a28"/><path d="M30 31h4" stroke="#8a6e4a" stroke-width="3"/>`,
  "Furcifer pardalis": // Panther chameleon
    disc("#d7ebd4") +
    `<path d="M10 42q4-18 22-18t18 12q-6 6-16 6z" fill="#2f9a7a"/><path d="M14 40q10-6 26-2" stroke="#e2543b" stroke-width="2.5" fill="none"/>` +
    `<circle cx="44" cy="32" r="4" fill="#f2c34a"/>${eye(44, 32, 1.4)}<path d="M12 44q-6 6 2 8" stroke="#2f9a7a" stroke-width="3" fill="none"/>`,
  "Equus quagga": // Plains zebra
    disc("#eee4c8") +
    `<ellipse cx="28" cy="36" rx="15" ry="9" fill="#f7f7f7" stroke="#222"/><path d="M18 29v14M24 27v18M30 27v18M36 28v16" stroke="#222" stroke-width="2"/>` +
    `<path d="M40 32l8-12 4 2-6 14z" fill="#f7f7f7" stroke="#222"/>${eye(48, 22, 1.1)}`,
  "Ursus maritimus": // Polar bear
    disc("#d5e7f2") +
    `<ellipse cx="30" cy="38" rx="18" ry="11" fill="#f7f7f2"/><circle cx="47" cy="30" r="8" fill="#f7f7f2"/><circle cx="44" cy="23" r="2.5" fill="#f7f7f2"/>` +
    `${eye(48, 29)}<circle cx="54" cy="32" r="1.8" fill="#222"/><path d="M12 38q4 2 2 6" stroke="#cfd6dc"/>`,
  "Osphranter rufus": // Red kangaroo
    disc("#f2dcc0") +
    `<ellipse cx="30" cy="38" rx="9" ry="13" fill="#c5633a"/><ellipse cx="37" cy="22" rx="5" ry="6" fill="#c5633a"/>` +
    `<path d="M35 16l-1-7M39 16l2-7" stroke="#c5633a" stroke-width="3"/><path d="M24 48q-14 6-16 10" stroke="#c5633a" stroke-width="4" fill="none"/>${eye(39, 21, 1.2)}`,
  "Pterois volitans": // Red lionfish
    disc("#cfe3f2") +
    `<ellipse cx="32" cy="34" rx="12" ry="8" fill="#f4e4d8"/><path d="M24 28v6M28 27v7M32 27v7M36 27v7" stroke="#c63b2f" stroke-width="2"/>` +
    `<path d="M22 26l-6-12M28 25l-2-14M34 25l2-14M40 26l6-12" stroke="#c63b2f" stroke-width="1.5"/><path d="M20 34l-10-6v12z" fill="#c63b2f"/>${eye(40, 33)}`,
  "Ailurus fulgens": // Red panda
    disc("#dceacd") +
    `<circle cx="32" cy="30" r="12" fill="#c4502a"/><path d="M20 24l-2-8 8 4M44 24l2-8-8 4" fill="#c4502a"/>` +
    `<ellipse cx="32" cy="34" rx="6" ry="4" fill="#f4ede4"/><ellipse cx="27" cy="28" rx="2.6" ry="3" fill="#f4ede4"/><ellipse cx="37" cy="28" rx="2.6" ry="3" fill="#f4ede4"/>` +
    `${eye(27, 29, 1.1)}${eye(37, 29, 1.1)}<path d="M44 44q10 4 12 12" stroke="#c4502a" stroke-width="5" fill="none"/>`,
  "Carcharias taurus": // Sand tiger shark
    disc("#c7dcef") +
    `<path d="M6 36q20-12 44-2l10-8-2 12 2 12-10-8q-24 8-44-6z" fill="#8e9aa6"/><path d="M28 26l4-10 4 12z" fill="#7b8794"/>` +
    `${eye(14, 34, 1.2)}<path d="M10 40l4-1 2 2 2-2 2 2" stroke="#eee" fill="none"/>`,
  "Ara macao": // Scarlet macaw
    disc("#d8eccf") +
    `<ellipse cx="30" cy="30" rx="9" ry="12" fill="#d8262b"/><path d="M26 40l-6 20h8z" fill="#2a6fd1"/><path d="M34 36l6 10-8-2z" fill="#f2c318"/>` +
    `<circle cx="33" cy="24" r="4" fill="#f4f0e8"/>${eye(33, 24, 1.2)}<path d="M37 26q5 0 3 6" stroke="#222" stroke-width="3" fill="none"/>`,
  "Bubo scandiacus": // Snowy owl
    disc("#d9e3ee") +
    `<ellipse cx="32" cy="36" rx="14" ry="17" fill="#f8f8f4"/><circle cx="26" cy="28" r="5" fill="#f2c318"/><circle cx="38" cy="28" r="5" fill="#f2c318"/>` +
    `${eye(26, 28, 2.2)}${eye(38, 28, 2.2)}<path d="M30 33l2 4 2-4z" fill="#333"/><path d="M24 42h2M30 44h2M36 42h2" stroke="#777"/>`,
  "Panthera tigris": // Tiger
    disc("#e6e2c2") +
    `<circle cx="32" cy="32" r="14" fill="#ea8a2a"/><path d="M20 24l4 5M44 24l-4 5M20 34l6-1M44 34l-6-1M32 18v6" stroke="#222" stroke-width="2"/>` +
    `<ellipse cx="32" cy="37" rx="6" ry="4" fill="#f6efe2"/>${eye(27, 30)}${eye(37, 30)}<path d="M30 35h4l-2 2z" fill="#333"/>`,
};

/** The illustration of a species by its scientific name, or null when the zoo has none. */
export function pictureOf(scientificName: unknown): string | null {
  return typeof scientificName === "string" ? (PICTURES[scientificName] ?? null) : null;
}
