/**
 * `npm run api-types`: writes the dashboard's typed API paths (src/dashboard/client/api-paths.generated.ts)
 * from the OpenAPI document the worker serves, which is itself generated from the routes' zod schemas.
 * So a route's request and answer are written once (its schema) and the dashboard's calls are checked
 * against them by `npm run typecheck`. The file is committed; test/tunnel.test.ts fails when it no longer
 * matches the served document, naming this command.
 */
import { writeFileSync } from "node:fs";
import { buildAll } from "./build";
import { newSecret, ROOT, startWorker } from "../dev/runtime";
import { apiPathsSource, API_PATHS_FILE } from "./api-paths-source";

await buildAll();
const secrets = { API_TOKEN: newSecret("at"), TUNNEL_SECRET: newSecret("ts") };
const worker = await startWorker({ secrets });
try {
  const res = await fetch(`${worker.url}/v1/openapi.json`, { headers: { authorization: `Bearer ${secrets.API_TOKEN}` } });
  if (!res.ok) throw new Error(`/v1/openapi.json answered ${res.status}`);
  writeFileSync(`${ROOT}/${API_PATHS_FILE}`, await apiPathsSource(await res.json()));
  process.stdout.write(`wrote ${API_PATHS_FILE}\n`);
} finally {
  await worker.dispose();
}
