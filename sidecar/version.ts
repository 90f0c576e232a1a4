/** Replaced at build time with package.json's version. */
declare const __SIDECAR_VERSION__: string | undefined;
export const SIDECAR_VERSION: string = typeof __SIDECAR_VERSION__ === "string" ? __SIDECAR_VERSION__ : "0.0.0-dev";
