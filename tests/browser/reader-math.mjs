// Checks the web reader's chapters of a book with mathematics in the system's headless
// Chromium, under the reader's Content-Security-Policy: every equation is laid out as MathML
// (a fraction's numerator above its denominator, not a run of text), nothing the policy
// blocks is asked for (no console error), and axe-core finds no violation.
//
//   node reader-math.mjs <url of the reader's index.html> <screenshot dir>
//
// Exits 0 when every check passed, 1 with a "FAIL: …" line otherwise.

import path from 'node:path';
import process from 'node:process';
import { audit } from './axe.mjs';
import { check, launch, run, step } from './harness.mjs';

const [index, shotDir] = process.argv.slice(2);
if (!index || !shotDir) {
  console.error('usage: node reader-math.mjs <reader index url> <screenshot dir>');
  process.exit(2);
}

run(async () => {
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text());
    });
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(index);
    const chapters = await page.$$eval('a[href^="chapter-"]', (links) => [
      ...new Set(links.map((a) => a.getAttribute('href'))),
    ]);
    check(chapters.length > 0, 'the contents list no chapter');
    let equations = 0;
    for (const chapter of chapters) {
      step(`${chapter}: equations are laid out as MathML`);
      await page.goto(new URL(chapter, index).href);
      const found = await page.$$eval('math', (all) =>
        all.map((m) => {
          const box = m.getBoundingClientRect();
          const frac = m.querySelector('mfrac');
          let stacked = null;
          if (frac && frac.children.length === 2) {
            const [num, den] = [...frac.children].map((c) => c.getBoundingClientRect());
            stacked = num.bottom <= den.top + 1;
          }
          return { width: box.width, height: box.height, stacked, display: m.getAttribute('display') };
        }),
      );
      equations += found.length;
      for (const [i, m] of found.entries()) {
        check(m.width > 0 && m.height > 0, `${chapter}: equation ${i + 1} has no size`);
        check(m.stacked !== false, `${chapter}: equation ${i + 1}'s fraction is not stacked (MathML not rendered)`);
      }
      const violations = await audit(page);
      check(violations.length === 0, `axe on ${chapter}:\n${violations.join('\n')}`);
      await page.screenshot({ path: path.join(shotDir, chapter.replace('.html', '.png')), fullPage: true });
    }
    check(equations > 0, 'no equation in the book');
    check(errors.length === 0, `console errors (a blocked inline style?):\n${errors.join('\n')}`);
    console.log(`${equations} equations in ${chapters.length} chapters laid out; axe found no violation`);
  } finally {
    await browser.close();
  }
});
