// Runs a TypeScript worker module when Hearth runs from source under tsx (tests, `make bench`,
// development). Node 20 does not apply the parent's `--import tsx` loader to worker threads
// (nodejs/node#47747), so this plain-JS entry loads the module named in argv through tsx's API.
// The build (dist/) starts its compiled .js workers directly and never loads this file.
import process from 'node:process';
import { tsImport } from 'tsx/esm/api';

await tsImport(process.argv[2], import.meta.url);
