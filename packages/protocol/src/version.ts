/**
 * The sidecar version released together with this worker (sidecar/package.json's version; a test keeps
 * them equal). The worker tells an older sidecar how to upgrade when it connects.
 */
export const LATEST_SIDECAR_VERSION = "0.1.0";

/** Compare two versions by their numeric major.minor.patch (a pre-release suffix is ignored): <0, 0, >0. */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) => (/^v?(\d+)\.(\d+)\.(\d+)/.exec(v)?.slice(1) ?? ["0", "0", "0"]).map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
}

export function sidecarVersionAdvice(version: string): { latest: string; outdated: boolean; upgrade: string | null } {
  const outdated = compareVersions(version, LATEST_SIDECAR_VERSION) < 0;
  return {
    latest: LATEST_SIDECAR_VERSION,
    outdated,
    upgrade: outdated
      ? `this sidecar is ${version}, the worker is released with ${LATEST_SIDECAR_VERSION}: upgrade with 'npm install -g agent-runtime-sidecar@${LATEST_SIDECAR_VERSION}' (or run 'npx agent-runtime-sidecar@${LATEST_SIDECAR_VERSION} connect'), then restart it`
      : null,
  };
}
