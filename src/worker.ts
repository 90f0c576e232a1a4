import { createApp, createRelayApp, isRelayPost } from "./app";
import type { Env } from "./env";

export { MachineObject } from "./durable/machine/machine";
export { TeamObject } from "./durable/team/team";
export { TokenObject } from "./durable/tokens/token";

const app = createApp();
// The relay's message goes past the whole app's router to an app of that route alone (app.ts, `createRelayApp`).
const relayApp = createRelayApp();

export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => (isRelayPost(request) ? relayApp : app).fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;
