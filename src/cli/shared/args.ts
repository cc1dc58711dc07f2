/**
 * The one way a command reads its flags: node:util parseArgs, strict (an unknown or malformed
 * flag is a usage error, exit 2: run.ts), with `-h` / `--help` on every command.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

type Options = NonNullable<ParseArgsConfig['options']>;
type CommandConfig<O extends Options, P extends boolean> = { args: string[]; options: O & typeof HELP; allowPositionals: P; strict: true };

/** The command's flags and `--help`; positionals only where the command takes them. */
export function commandArgs<O extends Options, P extends boolean = false>(argv: string[], options: O, opts: { positionals?: P } = {}): ReturnType<typeof parseArgs<CommandConfig<O, P>>> {
  return parseArgs<CommandConfig<O, P>>({ args: argv, options: { ...options, ...HELP }, allowPositionals: (opts.positionals ?? false) as P, strict: true });
}
