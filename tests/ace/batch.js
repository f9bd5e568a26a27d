#!/usr/bin/env node
// DAISY Ace on many EPUBs in one process and one browser: what `ace-puppeteer` does for one
// EPUB (the same checks, the same report.json), without starting Node, loading Ace and
// launching Chromium again for each. Ace's core launches and closes its axe runner around
// every EPUB; the runner handed to it here launches once and closes when all are done.
//
//   node batch.js OUTDIR EPUB…     writes OUTDIR/<n>/report.json for the nth EPUB (from 0)
//   env: PUPPETEER_EXECUTABLE_PATH  the system's Chromium (nothing is downloaded)
//
// Exits non-zero, naming the EPUB, if Ace could not check one.
'use strict';

const path = require('path');
const ace = require('@daisy/ace-core');
const logger = require('@daisy/ace-logger');
const runner = require('@daisy/ace-axe-runner-puppeteer');

const [outdir, ...epubs] = process.argv.slice(2);
if (!outdir || epubs.length === 0) {
  console.error('usage: node batch.js OUTDIR EPUB…');
  process.exit(2);
}

let launched = false;
const shared = {
  concurrency: runner.concurrency,
  setTimeout: (ms) => runner.setTimeout(ms),
  launch: async () => {
    if (!launched) {
      await runner.launch();
      launched = true;
    }
  },
  close: async () => {},
  run: (...args) => runner.run(...args),
};

(async () => {
  logger.initLogger({ verbose: false, silent: true });
  let failed = false;
  try {
    for (const [n, epub] of epubs.entries()) {
      const out = path.join(outdir, String(n));
      try {
        await ace(epub, {
          cwd: process.cwd(),
          outdir: out,
          tmpdir: path.join(out, 'unpacked'),
          silent: true,
          jobId: '',
          lang: 'en',
        }, shared);
      } catch (error) {
        console.error(`Ace could not check ${epub}: ${error && error.message ? error.message : error}`);
        failed = true;
      }
    }
  } finally {
    if (launched) await runner.close();
  }
  process.exit(failed ? 1 : 0);
})();
