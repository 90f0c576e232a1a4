/** A minimal ustar writer for tests: it writes exactly the entries given, hostile ones included (`../`, links out). */
export interface TarEntrySpec {
  name: string;
  /** "0" file, "2" symbolic link, "1" hard link, "5" folder, "6" FIFO */
  type?: "0" | "1" | "2" | "5" | "6";
  body?: Uint8Array | string;
  link?: string;
}

function field(block: Buffer, offset: number, length: number, value: string): void {
  block.write(value.slice(0, length), offset, "utf8");
}

function octal(value: number, length: number): string {
  return `${value.toString(8).padStart(length - 1, "0")}\0`;
}

export function tarArchive(entries: TarEntrySpec[]): Uint8Array<ArrayBuffer> {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = typeof entry.body === "string" ? Buffer.from(entry.body) : Buffer.from(entry.body ?? new Uint8Array());
    const type = entry.type ?? "0";
    const header = Buffer.alloc(512);
    field(header, 0, 100, entry.name);
    field(header, 100, 8, octal(type === "5" ? 0o755 : 0o644, 8));
    field(header, 108, 8, octal(0, 8));
    field(header, 116, 8, octal(0, 8));
    field(header, 124, 12, octal(type === "0" ? body.length : 0, 12));
    field(header, 136, 12, octal(Math.floor(Date.now() / 1000), 12));
    field(header, 148, 8, "        ");
    field(header, 156, 1, type);
    field(header, 157, 100, entry.link ?? "");
    field(header, 257, 6, "ustar\0");
    field(header, 263, 2, "00");
    let sum = 0;
    for (const byte of header) sum += byte;
    field(header, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
    blocks.push(header);
    if (type === "0" && body.length > 0) {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return new Uint8Array(Buffer.concat(blocks));
}
