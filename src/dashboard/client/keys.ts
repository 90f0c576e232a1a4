/** Ctrl with a letter (or one of @[\]^_) is that character's code & 0x1f, as a terminal sends it; anything else as it is. */
export function withCtrl(data: string): string {
  if (data.length !== 1) return data;
  const code = data.toUpperCase().charCodeAt(0);
  return code >= 64 && code <= 95 ? String.fromCharCode(code & 0x1f) : data;
}
