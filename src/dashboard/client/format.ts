/** How long ago, as a person says it. */
export function ago(ms: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

/** Who did something, as a person reads it: the bootstrap token is "API_TOKEN" to the worker, the deployment token to them. */
export const whoText = (name: string): string => (name === "API_TOKEN" ? "deployment token" : name);

export const when = (ms: number | null | undefined): string => (ms ? new Date(ms).toLocaleString() : "—");

export const sizeText = (n: number): string => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);
