/**
 * The worker's frames for a machine's streams and previews (`sub`, `unsub`, and a preview's `po`, `pd`,
 * `pw`, `px`), handed to its stream hub and its preview proxy: one switch for the sidecar's tunnel and
 * for the scale benchmark's simulated sidecar (bench/scale-sim.ts), which serve them with the same hub.
 */
import type { WorkerFrame } from "@agent-runtime/protocol/frames";
import type { PreviewFrame } from "@agent-runtime/protocol/preview";
import type { StreamHub } from "./stream-hub";

/** Hands `frame` on when it is one of them, and says so; any other frame is the caller's. */
export function routeStreamFrame(
  frame: WorkerFrame,
  hub: Pick<StreamHub, "subscribe" | "unsubscribe">,
  previews: { frame(frame: PreviewFrame): void } | null,
): boolean {
  switch (frame.t) {
    case "sub":
      hub.subscribe(frame.sub, frame.stream, frame.after, {
        recorder: frame.recorder ?? false,
        ...(frame.output ? { output: frame.output } : {}),
        packed: frame.packed ?? false,
        shared: frame.shared ?? false,
      });
      return true;
    case "unsub":
      hub.unsubscribe(frame.sub);
      return true;
    case "po":
    case "pd":
    case "pw":
    case "px":
      previews?.frame(frame);
      return true;
    default:
      return false;
  }
}
