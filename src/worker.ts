import { createApp } from "./app";
import type { Env } from "./env";

export { MachineObject } from "./durable/machine";
export { TeamObject } from "./durable/team";

const app = createApp();

export default { fetch: app.fetch } satisfies ExportedHandler<Env>;
