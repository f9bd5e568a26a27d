// Checks the web reader's printed pages in the system's headless Chromium, as a reader with a
// paperback beside them would use them: find "page 112" from the contents with the keyboard
// alone, land on it with its folio in the margin, and be told when a page is not in the book.
//
//   node page-list.mjs <url of the reader's index.html> <screenshot dir> <label> <words>
//
// <label> is a page the book has; <words> the text its page begins with. Every page visited
// must pass axe-core (WCAG 2 A/AA and best practices) with no violation and log no console
// error (the server sends the reader's strict Content-Security-Policy).
//
// Exits 0 when every check passed, 1 with a "FAIL: …" line otherwise.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { audit } from './axe.mjs';
import { check, launch, run, step } from './harness.mjs';

const [indexUrl, shotDir, label, words] = process.argv.slice(2);
if (!indexUrl || !shotDir || !label || !words) {
  console.error('usage: node page-list.mjs <index.html url> <screenshot dir> <label> <words>');
  process.exit(2);
}

const errors = [];

async function accessible(page, what) {
  const violations = await audit(page);
  check(violations.length === 0, `${what}: axe-core finds ${violations.length} violations:\n${violations.join('\n')}`);
}

async function shoot(page, name) {
  const file = path.join(shotDir, name);
  await page.screenshot({ path: file });
  console.log(`  screenshot ${file}`);
}

/** Presses Tab until `selector` has the focus (at most `limit` times). */
async function tabTo(page, selector, limit = 40) {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => document.activeElement && document.activeElement.matches(s), selector)) return;
  }
  throw new Error(`the keyboard never reaches ${selector}`);
}

run(async () => {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  try {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    const page = await context.newPage();
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(`console error: ${msg.text()}`);
    });
    page.on('pageerror', (error) => errors.push(`uncaught: ${error.message}`));

    step('the contents offer a "Go to page" field, reached and used with the keyboard alone');
    await page.goto(indexUrl);
    await accessible(page, 'index.html');
    const field = page.getByLabel('Go to page');
    check((await field.count()) === 1, 'the contents have no field labelled "Go to page"');
    await tabTo(page, '.goto-page input');
    await page.keyboard.type(label);
    await Promise.all([page.waitForURL(new RegExp(`#page-${label}$`)), page.keyboard.press('Enter')]);

    step(`page ${label} is on screen, below the bar, its folio in the margin`);
    const marker = page.locator(`[role="doc-pagebreak"][data-page="${label}"]`);
    check((await marker.count()) === 1, `no marker for page ${label}`);
    // The browser scrolls to the marker once the page has laid out; wait for that, not a time.
    await page.waitForFunction(
      (id) => {
        const box = document.getElementById(id).getBoundingClientRect();
        return box.top > 0 && box.top < window.innerHeight / 2;
      },
      `page-${label}`,
      { timeout: 5000 },
    );
    const shown = await marker.evaluate((el) => {
      const after = getComputedStyle(el, '::after');
      const bar = document.querySelector('.bar').getBoundingClientRect();
      return {
        folio: after.content,
        position: after.position,
        name: el.getAttribute('title'),
        belowBar: el.getBoundingClientRect().top >= bar.bottom - 1,
      };
    });
    check(shown.folio === `"${label}"`, `the folio shown is ${shown.folio}, not "${label}"`);
    check(shown.position === 'absolute', 'the folio is in the line of text, not in the margin');
    check(shown.name === `Page ${label}`, `the marker is named ${shown.name}`);
    check(shown.belowBar, 'the page begins under the bar, hidden');
    const following = await page.evaluate((id) => {
      const range = document.createRange();
      range.setStartAfter(document.getElementById(id));
      range.setEndAfter(document.querySelector('main'));
      return range.toString().split(/\s+/).filter(Boolean);
    }, `page-${label}`);
    const wanted = words.split(' ');
    check(
      following.slice(0, wanted.length).join(' ') === words,
      `page ${label} begins with "${following.slice(0, wanted.length).join(' ')}", not "${words}"`,
    );
    const folios = await page.locator('.chapter .pagebreak').count();
    check(folios > 1, 'the chapter shows one folio or none');
    await shoot(page, `page-${label}.png`);
    await accessible(page, `the chapter of page ${label}`);

    step('the bar leads from a chapter to the pages, by keyboard');
    await page.goto(page.url().replace(/#.*$/, ''));
    await tabTo(page, '.bar-pages');
    await Promise.all([page.waitForURL(/pages\.html$/), page.keyboard.press('Enter')]);
    await accessible(page, 'pages.html');

    step('a page the book does not have is said, and the field keeps it to correct');
    await page.goto(new URL('pages.html?page=99999', indexUrl).href);
    const status = page.locator('#goto-status');
    await status.filter({ hasText: 'no page' }).waitFor({ timeout: 5000 });
    const said = (await status.innerText()).trim();
    check(said.includes('\u201c99999\u201d'), `the status says "${said}"`);
    const focused = await page.evaluate(() => ({
      value: document.activeElement.value,
      invalid: document.activeElement.getAttribute('aria-invalid'),
    }));
    check(focused.value === '99999' && focused.invalid === 'true', 'the field does not hold the page asked for');
    await shoot(page, 'no-such-page.png');
    await accessible(page, 'pages.html with no such page');

    step('front matter pages go by their roman numerals, whatever the case');
    await Promise.all([
      page.waitForURL(/#page-ii$/),
      page.goto(new URL('pages.html?page=II', indexUrl).href),
    ]);

    check(errors.length === 0, errors.join('\n'));
    console.log('PASS');
  } finally {
    await browser.close();
  }
});
