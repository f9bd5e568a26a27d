// Checks that a reader's contents page and first chapter fit the screen on a desktop and a
// phone, in the system's headless Chromium, under the reader's Content-Security-Policy: nothing
// scrolls sideways, the book's title is shown whole (no word of it cut off or hidden), no
// console error, and axe-core finds no violation. Screenshots are kept.
//
//   node reader-fits.mjs <url of the reader's index.html> <screenshot dir> <name>
//
// Exits 0 when every check passed, 1 with a "FAIL: …" line otherwise.

import path from 'node:path';
import process from 'node:process';
import { audit } from './axe.mjs';
import { check, launch, run, step } from './harness.mjs';

const [index, shotDir, name] = process.argv.slice(2);
if (!index || !shotDir || !name) {
  console.error('usage: node reader-fits.mjs <reader index url> <screenshot dir> <name>');
  process.exit(2);
}

const SCREENS = {
  desktop: { viewport: { width: 1280, height: 900 } },
  phone: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true },
};

run(async () => {
  const browser = await launch();
  try {
    for (const [screen, options] of Object.entries(SCREENS)) {
      const context = await browser.newContext(options);
      const page = await context.newPage();
      const errors = [];
      page.on('console', (msg) => {
        if (msg.type() === 'error') errors.push(msg.text());
      });
      page.on('pageerror', (error) => errors.push(error.message));
      for (const [label, url] of [['contents', index], ['chapter', new URL('chapter-001.html', index).href]]) {
        step(`${screen}: the ${label} page`);
        await page.goto(url);
        await page.waitForLoadState('load');
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        check(overflow <= 0, `${screen} ${label}: the page scrolls sideways by ${overflow}px`);
        if (label === 'contents') {
          // Every word of the title heading is inside the page's width and not clipped.
          const clipped = await page.evaluate(() => {
            const heading = document.querySelector('h1');
            if (!heading) return 'no h1';
            const style = getComputedStyle(heading);
            if (style.overflow === 'hidden' || style.textOverflow === 'ellipsis') return `h1 is clipped (${style.overflow}, ${style.textOverflow})`;
            const box = heading.getBoundingClientRect();
            return box.right <= window.innerWidth + 1 ? '' : `h1 reaches ${box.right}px`;
          });
          check(clipped === '', `${screen}: the title ${clipped}`);
        }
        const violations = await audit(page);
        check(violations.length === 0, `${screen} ${label}: axe-core finds ${violations.length} violations:\n${violations.join('\n')}`);
        const file = path.join(shotDir, `${name}-${screen}-${label}.png`);
        await page.screenshot({ path: file, fullPage: label === 'contents' });
        console.log(`  screenshot ${file}`);
      }
      check(errors.length === 0, `${screen}: console errors:\n${errors.join('\n')}`);
      await context.close();
    }
    console.log('PASS');
  } finally {
    await browser.close();
  }
});
