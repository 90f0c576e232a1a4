import { createApp, createRelayApp } from "./app";
import type { Env } from "./env";
import { isRelayPost, relayPost } from "./http/relay-post";

export { MachineObject } from "./durable/machine/machine";
export { TeamObject } from "./durable/team/team";
export { TokenObject } from "./durable/tokens/token";

const app = createApp();
// The relay's message goes past the whole app's router: answered at once where every check passes
// (http/relay-post.ts), else by an app of that route alone (app.ts, `createRelayApp`).
const relayApp = createRelayApp();

export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => (isRelayPost(request) ? relayPost(request, env, ctx, relayApp) : app.fetch(request, env, ctx)),
} satisfies ExportedHandler<Env>;
