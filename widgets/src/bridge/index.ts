export * from "./bridge";
export * from "./hooks";
export * from "./router";
export type * from "./types";
