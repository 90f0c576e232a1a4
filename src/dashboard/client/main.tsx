/** The dashboard's entry: the app into the page, and the service worker (notifications, the last sessions offline). */
import { render } from "preact";
import { App } from "./app";

render(<App />, document.getElementById("root")!);
// The service worker shows pushes even before this page asks for them (a subscription made on another tab).
if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js").catch(() => {});
