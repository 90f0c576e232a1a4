/** A machine's files: the folder in the address (`?path=`), open and edit text, upload, download. */
import { useEffect, useRef, useState } from "preact/hooks";
import type { FsEntry } from "@agent-runtime/protocol/files";
import { api, errorText, machineApi, must, refusal, typedMachine } from "../api";
import { sizeText } from "../format";
import { machineHref, navigate } from "../router";
import { useCan } from "../session-context";
import { Note, Table, WideInput } from "./parts";

/** Files larger than this are downloaded rather than opened in the page. */
const EDITABLE_BYTES = 1024 * 1024;

const parentOf = (folder: string) => folder.replace(/\/[^/]+\/?$/, "") || "/";

/** `connected`: the machine's presence as the page's header shows it; a change reads the folder again (an open file stays open). */
export function FilesTab(props: { machine: string; connected: boolean | null; folder: string }) {
  const v1 = machineApi(props.machine);
  const canAct = useCan("member");
  const [folder, setFolder] = useState<string | null>(null);
  const [typed, setTyped] = useState(props.folder);
  const [entries, setEntries] = useState<FsEntry[] | null>(null);
  const [note, setNote] = useState("");
  const [file, setFile] = useState<{ path: string; text: string } | null>(null);
  const [fileNote, setFileNote] = useState("");
  const editor = useRef<HTMLDivElement>(null);
  // The editor is drawn under the folder's list: a file opened from a long list is brought to it, not left below.
  useEffect(() => {
    if (file) editor.current?.scrollIntoView({ block: "start" });
  }, [file?.path]);
  const fileUrl = (path: string) => `${v1}/fs/file?path=${encodeURIComponent(path)}`;
  const open = (path: string) => navigate(machineHref(props.machine, "files", path ? { path } : {}));

  /** Only the newest load draws: an older one (the folder before a click) answering late is dropped. */
  const loads = useRef(0);
  const load = async () => {
    const mine = ++loads.current;
    setNote("");
    try {
      const fs = typedMachine(props.machine);
      const list = await must(fs.GET("/v1/fs/entries", { params: { query: props.folder ? { path: props.folder } : {} } }));
      const shown = props.folder || (await must(fs.GET("/v1/fs/stat", { params: { query: { path: "~" } } }))).path;
      if (mine !== loads.current) return;
      list.sort((a, b) => (a.entryType === b.entryType ? a.name.localeCompare(b.name) : a.entryType === "directory" ? -1 : 1));
      setFolder(shown);
      setEntries(list);
    } catch (err) {
      if (mine === loads.current) setNote(errorText(err));
    }
  };
  useEffect(() => setFile(null), [props.machine, props.folder]);
  useEffect(() => {
    void load();
  }, [props.machine, props.folder, props.connected]);
  // The box shows the folder shown, unless the person is typing another.
  useEffect(() => {
    if (folder !== null) setTyped(folder);
  }, [folder]);

  const openFile = async (entry: FsEntry) => {
    if (entry.size > EDITABLE_BYTES) return setNote(`${entry.name} is ${sizeText(entry.size)}: download it instead`);
    const res = await api(fileUrl(entry.path));
    if (!res.ok) return setNote((await refusal(res)).message);
    try {
      const text = new TextDecoder("utf-8", { fatal: true }).decode(await res.arrayBuffer());
      setFile({ path: entry.path, text });
      setFileNote("");
    } catch {
      setNote(`${entry.name} is not text: download it instead`);
    }
  };
  const download = async (entry: FsEntry) => {
    const res = await api(fileUrl(entry.path));
    if (!res.ok) return setNote((await refusal(res)).message);
    const link = document.createElement("a");
    link.href = URL.createObjectURL(await res.blob());
    link.download = entry.name;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  };
  const save = async () => {
    if (!file) return;
    const res = await api(fileUrl(file.path), { method: "PUT", headers: { "content-type": "application/octet-stream" }, body: file.text });
    if (!res.ok) return setFileNote((await refusal(res)).message);
    // The schema comes with the first save: the first view's script carries no schema library.
    const { FsWriteResponse } = await import("@agent-runtime/protocol/files");
    const written = FsWriteResponse.safeParse(await res.json().catch(() => null));
    setFileNote(written.success ? `saved (${sizeText(written.data.bytesWritten)})` : "saved");
    await load();
  };
  const upload = async (input: HTMLInputElement) => {
    for (const f of Array.from(input.files ?? [])) {
      const res = await api(fileUrl(`${(folder ?? "").replace(/\/$/, "")}/${f.name}`), {
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
        body: f,
      });
      setNote(res.ok ? `uploaded ${f.name}` : (await refusal(res)).message);
    }
    input.value = "";
    await load();
  };

  return (
    <section id="files-view">
      <form
        id="files-form"
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          open(typed.trim());
        }}
      >
        <button id="files-up" type="button" title="the folder above" aria-label="the folder above" onClick={() => folder && open(parentOf(folder))}>
          ↑
        </button>
        <WideInput id="files-path" placeholder="a folder on the machine (empty: HOME)" value={typed} onValue={setTyped} />
        <button type="submit">Open</button>
        {canAct ? (
          <label class="row muted check">
            upload: <input id="files-upload" type="file" multiple onChange={(e) => upload(e.currentTarget)} />
          </label>
        ) : null}
      </form>
      <Note id="files-msg" text={note} />
      <Table
        id="files"
        rows={entries ?? []}
        empty={entries ? "empty folder" : undefined}
        rowProps={(e) => ({ "data-entry": e.name, class: e.entryType === "directory" ? "dir" : "file" })}
        columns={[
          {
            label: "name",
            class: "name",
            cell: (e) => (
              <button type="button" class="link" onClick={() => (e.entryType === "directory" ? open(e.path) : openFile(e))}>
                {e.name}
              </button>
            ),
          },
          { label: "size", cell: (e) => (e.entryType === "directory" ? "" : sizeText(e.size)) },
          { label: "modified", cell: (e) => (e.modified ? new Date(e.modified).toLocaleString() : "") },
          {
            label: "",
            cell: (e) =>
              e.entryType === "directory" ? null : (
                <button type="button" data-download={e.name} onClick={() => download(e)}>
                  Download
                </button>
              ),
          },
        ]}
      />
      {file ? (
        <div id="file-editor" ref={editor}>
          <div class="row">
            <b id="file-name" class="grow">
              {file.path}
            </b>
            {canAct ? (
              <button id="file-save" type="button" class="primary" onClick={save}>
                Save
              </button>
            ) : null}
            <button id="file-close" type="button" onClick={() => setFile(null)}>
              Close
            </button>
          </div>
          <Note id="file-msg" text={fileNote} />
          <textarea id="file-text" spellcheck={false} value={file.text} onInput={(e) => setFile({ path: file.path, text: e.currentTarget.value })} />
        </div>
      ) : null}
    </section>
  );
}
