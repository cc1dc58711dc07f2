/** The folder a command that writes a fresh set of files (demo, dev-stack) writes them to. */
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors/errors.js';

function timestamp(d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** A new folder `./aer1-<command>-<timestamp>` for the default, or the given one when it is absent or empty. */
export function prepareOutDir(given: string | undefined, command: string, now = new Date()): string {
  if (given === undefined) {
    const base = resolve(`aer1-${command}-${timestamp(now)}`);
    let dir = base;
    for (let i = 2; existsSync(dir) && i < 100; i++) dir = `${base}-${i}`;
    if (existsSync(dir)) throw new UsageError(`${command}: cannot find a free folder name next to ${base}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  }
  const dir = resolve(given);
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new UsageError(`${command}: --out ${given} is not a directory`);
    if (readdirSync(dir).length > 0) throw new UsageError(`${command}: --out ${given} is not empty (the ${command} writes a fresh set of files)`);
    return dir;
  }
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new UsageError(`${command}: cannot create ${given}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'unwritable');
  }
  return dir;
}
