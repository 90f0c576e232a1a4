/**
 * A machine's previews in its object (docs/architecture.md, "Previews"): who may open them (`PreviewAccess`)
 * and the proxied streams themselves (`PreviewStreams`), behind the one path a route hands a preview to:
 *
 *   /_preview/{port}?path=<the app's path and query>&pass=<pass>     (+ the request's method, headers, body)
 *
 * The route has chosen the headers the app sees; the pass is checked here, where it is kept.
 */
import type { ProblemInit } from "@agent-runtime/protocol/problems";
import { problemResponse } from "../../lib/problem-response";
import type { StreamHolder, StreamHolders } from "../streams/stream-holders";
import type { Tunnel } from "../machine/tunnel";
import { type AccessStorage, PreviewAccess } from "./preview-access";
import { PREVIEW_TAG, PreviewStreams, previewSocketOf } from "./preview-streams";
import { closeQuietly } from "../../lib/close-reason";
import type { MachineFeature, SocketKind } from "../machine/feature";
import type { ObjectRequest } from "../machine/object-requests";

export interface MachinePreviewsHost {
  tunnel: Pick<Tunnel, "send" | "newId" | "previewOffer">;
  storage: AccessStorage;
  accept(ws: WebSocket, tags: string[]): void;
  sockets(tag: string): WebSocket[];
  /** The tags that end a socket with its holder's token, and the watch that tells a token it holds a pass here. */
  holders: Pick<StreamHolders, "socketTags" | "watch">;
}

export class MachinePreviews implements MachineFeature {
  readonly streams: PreviewStreams;
  readonly access: PreviewAccess;
  /** A browser's socket to an app on the machine, relayed as `pd`/`px` frames. */
  readonly sockets: SocketKind = {
    tag: PREVIEW_TAG,
    message: (ws, message) => {
      const sid = previewSocketOf(ws);
      if (sid) this.streams.socketMessage(ws, sid, message);
    },
    closed: (ws, code, reason) => {
      const sid = previewSocketOf(ws);
      if (sid) this.streams.socketClosed(sid, code, reason);
    },
    end: (ws, problem) => {
      closeQuietly(ws, 1008, problem.detail);
      const sid = previewSocketOf(ws);
      if (sid) this.streams.socketClosed(sid, 1008, "");
    },
  };

  constructor(private readonly host: MachinePreviewsHost) {
    const { tunnel } = host;
    this.streams = new PreviewStreams({
      send: (frame) => tunnel.send(frame),
      newId: () => tunnel.newId(),
      offer: () => tunnel.previewOffer(),
      accept: (ws, tags) => host.accept(ws, tags),
      sockets: (tag) => host.sockets(tag),
    });
    this.access = new PreviewAccess(host.storage, (holder) => host.holders.watch(holder));
  }

  /** The tunnel dropped: every preview ends now (the browser opens it again). */
  gone(): void {
    this.streams.failAll({ code: "machine_offline", detail: "the tunnel to the machine dropped: open the preview again" });
  }

  restarted(problem: ProblemInit): void {
    this.streams.failAll(problem);
  }

  /** A route's preview request (object-requests.ts: its port, the app's path and the pass it came with). */
  fetch(request: Request, asked: ObjectRequest): Promise<Response> | null {
    if (asked.kind !== "preview") return null;
    const { port, path: appPath, pass: secret } = asked;
    const pass = this.access.check(secret, port);
    if (!pass)
      return Promise.resolve(
        problemResponse({ code: "token_invalid", detail: "this preview's pass is not valid or expired: open the preview again from the dashboard" }),
      );
    return this.streams.request(request, port, appPath, this.host.holders.socketTags(pass.holder));
  }

  /** A grant (host mode) or a pass (path mode) to preview `port`, held by `holder` (a member of this machine). */
  mint(port: number, holder: StreamHolder, kind: "grant" | "pass"): { secret: string; expiresAtMs: number } {
    return this.access.mint(port, holder, kind);
  }

  /** A grant traded once for a pass (null: used, expired or unknown). */
  redeem(grant: string): { secret: string; port: number; expiresAtMs: number } | null {
    const redeemed = this.access.redeem(grant);
    return redeemed && { secret: redeemed.secret, port: redeemed.pass.port, expiresAtMs: redeemed.pass.expiresAtMs };
  }
}
