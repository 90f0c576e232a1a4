/** seek-bzip ships no types: the one function the sidecar calls (sidecar/agents/archive.ts). */
declare module "seek-bzip" {
  const Bunzip: { decode(input: Uint8Array): Buffer };
  export default Bunzip;
}
