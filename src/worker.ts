import { createApp, createRelayApp } from "./app";
import type { Env } from "./env";
import { relayPost, relayPostUrl } from "./http/relay-post";

export { MachineObject } from "./durable/machine/machine";
export { TeamObject } from "./durable/team/team";
export { TokenObject } from "./durable/tokens/token";

const app = createApp();
// The relay's message goes past the whole app's router: answered at once where every check passes
// (http/relay-post.ts), else by an app of that route alone (app.ts, `createRelayApp`).
const relayApp = createRelayApp();

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext) {
    const relayed = relayPostUrl(request);
    return relayed ? relayPost(request, relayed, env, ctx, relayApp) : app.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
