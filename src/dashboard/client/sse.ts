/** One event of a `text/event-stream`: its name (default `message`), its id, and its data parsed as JSON. */
export interface SseEvent {
  event: string;
  id: string | null;
  data: unknown;
}

/**
 * Splits what arrived so far into whole events; the rest waits for more bytes. The runtime's streams send
 * one JSON document per event (and `:` keep-alive comments, which carry no data and are skipped).
 */
export function takeEvents(buffer: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  let rest = buffer;
  for (let cut = rest.indexOf("\n\n"); cut >= 0; cut = rest.indexOf("\n\n")) {
    const block = rest.slice(0, cut);
    rest = rest.slice(cut + 2);
    let event = "message";
    let id: string | null = null;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("id:")) id = line.slice(3).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
    if (data.length) events.push({ event, id, data: JSON.parse(data.join("\n")) });
  }
  return { events, rest };
}
