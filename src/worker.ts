import { createApp } from "./app";
import type { Env } from "./env";

export { MachineObject } from "./durable/machine/machine";
export { TeamObject } from "./durable/team/team";
export { TokenObject } from "./durable/tokens/token";

const app = createApp();

export default { fetch: app.fetch } satisfies ExportedHandler<Env>;
