// Choosing a style in the system's headless Chromium, on a desktop and on a phone: the book
// page's style picker, then the styles page with the book in every built-in style (its title
// page, chapter opening and a scene break in print, and the same passages as the reader shows
// them), checked by axe-core; then a style chosen there, and the book made again in it. Each
// style's chapter opening is photographed in print and in the reader, and kept.
//
//   node styles.mjs <base url> <screenshot dir>
//   env: BINDERY_TOKEN   a token to sign in with
//        BINDERY_BOOK    the id of a ready book of that token's tenant
//        BINDERY_STYLES  the built-in styles' names, comma-separated
//
// Ends with OK; exits 1 with a "FAIL: …" line otherwise.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { check, launch, run, signIn, step } from './harness.mjs';
import { audit } from './axe.mjs';

const [base, shotDir] = process.argv.slice(2);
const { BINDERY_TOKEN: token, BINDERY_BOOK: book, BINDERY_STYLES: names } = process.env;
if (!base || !shotDir || !token || !book || !names) {
  console.error('usage: see the header of styles.mjs');
  process.exit(2);
}
const styles = names.split(',');
const url = (p) => new URL(p, base).href;
const DESKTOP = { viewport: { width: 1280, height: 900 } };
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

const problems = [];
function watch(page, label) {
  page.on('console', (msg) => {
    // A failed request is named by the response listener below, with its address.
    if (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())) {
      problems.push(`${label}: console error: ${msg.text()}`);
    }
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${label}: ${response.status()} for ${response.url()}`);
  });
  page.on('pageerror', (error) => problems.push(`${label}: uncaught: ${error.message}`));
}

async function look(page, name) {
  await page.screenshot({ path: path.join(shotDir, name), fullPage: true });
  const violations = await audit(page);
  for (const v of violations) problems.push(`axe on ${name} (${page.url()}): ${v}`);
  console.log(`  ${name}: ${violations.length} axe violations`);
}

/** The styles page once every preview is made and every image has loaded. */
async function stylesPage(page) {
  await page.goto(url(`/books/${book}/styles`));
  await page.waitForFunction(() => !document.querySelector('[data-pending]'), null, { timeout: 120000 });
  await page.waitForLoadState('load');
  const images = page.locator('.preview-pages img');
  const count = await images.count();
  check(count >= styles.length * 2, `the styles page shows ${count} pages for ${styles.length} styles`);
  for (let i = 0; i < count; i += 1) {
    await images.nth(i).scrollIntoViewIfNeeded();
    const loaded = await images.nth(i).evaluate((img) => img.decode().then(() => img.naturalWidth > 0, () => false));
    check(loaded, `preview image ${i} did not load`);
  }
}

run(async () => {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  try {
    for (const [label, device] of [['desktop', DESKTOP], ['phone', PHONE]]) {
      const context = await browser.newContext(device);
      const page = await context.newPage();
      watch(page, label);
      await signIn(page, base, token);

      step(`${label}: the book page offers the styles`);
      await page.goto(url(`/books/${book}`));
      const choices = page.locator('#restyle input[name=style]');
      check((await choices.count()) === styles.length, `the picker offers ${await choices.count()} styles`);
      check(await page.locator('#restyle input[name=style]:checked').count() === 1, 'the book\'s style is checked');
      await page.locator('#design-title').scrollIntoViewIfNeeded();
      await look(page, `${label}-book-picker.png`);

      step(`${label}: the book in every style`);
      await stylesPage(page);
      await look(page, `${label}-styles.png`);
      context.close();
    }

    step('each style\'s chapter opening, in print and in the reader');
    const context = await browser.newContext(DESKTOP);
    const page = await context.newPage();
    watch(page, 'openings');
    await signIn(page, base, token);
    for (const style of styles) {
      // The print edition's page is the PNG itself, as the styles page shows it.
      const print = await page.request.get(url(`/books/${book}/preview/${style}/opening.png`));
      check(print.ok() && print.headers()['content-type'] === 'image/png', `${style}: the print opening`);
      await writeFile(path.join(shotDir, `${style}-print-opening.png`), await print.body());
      const reader = await page.goto(url(`/books/${book}/preview/${style}/reader.html`));
      check(reader.ok(), `${style}: the reader's passages`);
      // The style's own stylesheet is what shows them.
      const title = await page.evaluate(() => getComputedStyle(document.querySelector('h1')).fontFamily);
      check(title.length > 0, `${style}: the reader's heading has a typeface`);
      await page.screenshot({ path: path.join(shotDir, `${style}-reader-opening.png`) });
    }

    step('a style chosen on the styles page makes the book again in it');
    await stylesPage(page);
    const classic = page.locator('section[data-style=classic]');
    await Promise.all([
      page.waitForURL(new RegExp(`/books/${book}$`)),
      classic.locator('button[type=submit]').click(),
    ]);
    await page.waitForFunction(
      () => document.querySelector('#book')?.dataset.status === 'ready'
        && !document.querySelector('[data-building]'),
      null,
      { timeout: 120000, polling: 500 },
    ).catch(() => {});
    await page.waitForFunction(async (id) => {
      const answer = await fetch(`/api/v1/books/${id}`, { headers: { Accept: 'application/json' } });
      const body = await answer.json();
      return body.revision >= 2 && body.status === 'ready';
    }, book, { timeout: 120000, polling: 1000 });
    await page.reload();
    const checked = await page.locator('#restyle input[name=style]:checked').getAttribute('value');
    check(checked === 'classic', `after choosing Classic the book page checks ${checked}`);
    await context.close();
  } finally {
    await browser.close();
  }
  check(problems.length === 0, problems.join('\n'));
  console.log('OK');
});
