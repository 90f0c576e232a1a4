/**
 * What a machine's tab says when the machine cannot be read (docs/architecture.md, "Live presence and
 * ports"): a tab keeps the rows it last read (`useResource`), so while the machine is away it shows them
 * as what they are, says why, and offers no action on them (a Stop, an Open or an Install cannot reach it).
 * The tab's line shows this before its own last message: an earlier "started p-1" must not hide it.
 */

/**
 * Why the tab's rows are not the machine's as it is now: the read's own error when the last read failed,
 * else that the header shows the machine offline (its read again may still be on its way); "" when
 * neither. `shown`: the tab still shows rows from an earlier read.
 */
export function unreachableText(readError: string, connected: boolean | null, machine: string, shown: boolean): string {
  const why = readError || (connected === false ? `${machine} is offline` : "");
  return why && shown ? `${why} (shown: the list as last read)` : why;
}
