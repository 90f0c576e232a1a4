import { createApp } from "./app";
import type { Env } from "./env";

export { MachineObject } from "./durable/machine";
export { TeamObject } from "./durable/team";
export { TokenObject } from "./durable/token";

const app = createApp();

export default { fetch: app.fetch } satisfies ExportedHandler<Env>;
