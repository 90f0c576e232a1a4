/** HTML files are bundled as text (esbuild `loader: text`, wrangler `Text` rule). */
declare module "*.html" {
  const text: string;
  export default text;
}
