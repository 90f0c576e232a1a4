/**
 * A view whose code loads with it (docs/architecture.md, "The dashboard"): the terminal's xterm.js and the
 * diff renderer are not in the script a first visit downloads, only in the chunk a person opens.
 */
import type { ComponentType } from "preact";
import { useEffect, useState } from "preact/hooks";

export function lazyView<P extends object>(load: () => Promise<ComponentType<P>>): ComponentType<P> {
  let loaded: ComponentType<P> | null = null;
  let loading: Promise<ComponentType<P>> | null = null;
  return function LazyView(props: P) {
    const [view, setView] = useState<ComponentType<P> | null>(() => loaded);
    const [failed, setFailed] = useState("");
    useEffect(() => {
      if (view) return;
      let current = true;
      loading ??= load().then((component) => {
        loaded = component;
        return component;
      });
      loading.then(
        (component) => current && setView(() => component),
        (err: unknown) => {
          loading = null; // a later visit tries again (the network may be back)
          if (current) setFailed(err instanceof Error ? err.message : String(err));
        },
      );
      return () => {
        current = false;
      };
    }, [view]);
    if (view) {
      const View = view;
      return <View {...props} />;
    }
    return <p class="muted">{failed ? `Could not load this view: ${failed}` : "Loading…"}</p>;
  };
}
