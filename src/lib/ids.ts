/** 16 random hex digits: the unique part of the runtime's ids (`ses-…`, `task-…`, `sch-…`, token ids). */
export function randomHex16(): string {
  return [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, "0")).join("");
}
