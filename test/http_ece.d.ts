/** The few calls of http_ece (Martin Thomson's RFC 8188 implementation) the tests use to decrypt pushes apart from our code. */
declare module "http_ece" {
  import type { ECDH } from "node:crypto";
  const ece: {
    decrypt(buffer: Buffer, params: { version: "aes128gcm"; privateKey: ECDH; authSecret: Buffer }): Buffer;
  };
  export default ece;
}
