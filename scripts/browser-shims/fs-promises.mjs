// node:fs/promises for the browser bundle: there are no files; headers come in memory or from Esplora.
export async function readFile(path) {
  throw new Error(`no file system in the browser (wanted ${path}); drop the file on the page instead`);
}
export default { readFile };
