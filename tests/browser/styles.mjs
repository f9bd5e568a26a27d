// Choosing a style in the system's headless Chromium, on a desktop and on a phone: the book
// page's style picker, then the styles page with the book in every built-in style (its title
// page, chapter opening and a scene break in print, and the same passages as the reader shows
// them), checked by axe-core; then a style chosen there, and the book made again in it. Each
// style's chapter opening is photographed in print and in the reader, and kept. Then the
// house styles page: a style too pale is refused with its line, the test house style added
// through the form with its fonts and ornament, and the page, listing it with its preview,
// checked by axe-core on both devices.
//
//   node styles.mjs <base url> <screenshot dir>
//   env: BINDERY_TOKEN   a token to sign in with
//        BINDERY_BOOK    the id of a ready book of that token's tenant
//        BINDERY_STYLES  the built-in styles' names, comma-separated
//        BINDERY_HOUSE_STYLE  the test house style's folder (noir.toml and its files)
//
// Ends with OK; exits 1 with a "FAIL: …" line otherwise.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { check, launch, run, signIn, step } from './harness.mjs';
import { audit } from './axe.mjs';

const [base, shotDir] = process.argv.slice(2);
const {
  BINDERY_TOKEN: token, BINDERY_BOOK: book, BINDERY_STYLES: names, BINDERY_HOUSE_STYLE: house,
} = process.env;
if (!base || !shotDir || !token || !book || !names || !house) {
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

/** A page of previews once every one is made and every image (lazy ones too) has loaded; how many. */
async function previewsLoaded(page) {
  await page.waitForFunction(() => !document.querySelector('[data-pending]'), null, { timeout: 120000 });
  await page.waitForLoadState('load');
  const images = page.locator('.preview-pages img');
  const count = await images.count();
  for (let i = 0; i < count; i += 1) {
    await images.nth(i).scrollIntoViewIfNeeded();
    const loaded = await images.nth(i).evaluate((img) => img.decode().then(() => img.naturalWidth > 0, () => false));
    check(loaded, `preview image ${i} of ${page.url()} did not load`);
  }
  return count;
}

/** The book's styles page once every preview is made and every image has loaded. */
async function stylesPage(page) {
  await page.goto(url(`/books/${book}/styles`));
  const count = await previewsLoaded(page);
  check(count >= styles.length * 2, `the styles page shows ${count} pages for ${styles.length} styles`);
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

    step('a house style too pale is refused on the styles page, naming its line');
    // The styles page reloads itself once the previews it waits for are made (styles.js),
    // which would wipe a form being filled in: the forms are used on a page that waits for
    // nothing.
    await stylesPageAtRest(page);
    const source = await readFile(path.join(house, 'noir.toml'), 'utf8');
    const files = ['NotoSerif-Regular.ttf', 'NotoSerif-Italic.ttf', 'leaf.svg'].map((f) => path.join(house, f));
    const form = page.locator('form[data-url="/api/v1/styles"]');
    await form.locator('input[name=style]').setInputFiles({
      name: 'noir.toml', mimeType: 'text/plain', buffer: Buffer.from(source.replace('#7a1c1c', '#c0c0c0')),
    });
    await form.locator('input[name=files]').setInputFiles(files);
    const refusal = page.waitForResponse((r) => r.url().endsWith('/api/v1/styles') && r.request().method() === 'POST');
    await form.locator('button[type=submit]').click();
    check((await refusal).status() === 422, 'the pale style is refused');
    const alert = page.locator('.add-style .error[role=alert]');
    await alert.waitFor({ state: 'visible' });
    const said = await alert.textContent();
    check(/line 24/.test(said) && /4\.5:1/.test(said), `the refusal names the line and the reason: ${said}`);
    // The 422 was the point of this step, not a problem.
    const seen = problems.findIndex((p) => p.includes('422 for') && p.includes('/api/v1/styles'));
    if (seen >= 0) problems.splice(seen, 1);

    step('the house style added with its fonts and ornament, listed and previewed');
    await stylesPageAtRest(page);
    await form.locator('input[name=style]').setInputFiles(path.join(house, 'noir.toml'));
    await form.locator('input[name=files]').setInputFiles(files);
    await Promise.all([
      page.waitForEvent('load'),
      form.locator('button[type=submit]').click(),
    ]);
    await page.waitForFunction(() => !document.querySelector('[data-pending]'), null, { timeout: 120000 });
    const noir = page.locator('section[data-style=noir]');
    check(await noir.count() === 1, 'the styles page lists the house style');
    check(/house style/.test(await noir.locator('h2').textContent()), 'it is marked as a house style');
    check(await noir.locator('.preview-pages img').count() >= 2, 'it shows its preview');
    await context.close();

    for (const [label, device] of [['desktop', DESKTOP], ['phone', PHONE]]) {
      const context = await browser.newContext(device);
      const page = await context.newPage();
      watch(page, `${label} house styles`);
      await signIn(page, base, token);
      step(`${label}: the styles page, the house style among them`);
      await page.goto(url('/styles'));
      const shown = await previewsLoaded(page);
      check(shown >= (styles.length + 1) * 2, `${label}: the styles page shows ${shown} pages`);
      const wide = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
      check(!wide, `${label}: the styles page scrolls sideways`);
      await look(page, `${label}-house-styles.png`);
      await page.goto(url(`/books/${book}`));
      const offered = await page.locator('#restyle input[name=style]').count();
      check(offered === styles.length + 1, `${label}: the book's picker offers ${offered} styles`);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  check(problems.length === 0, problems.join('\n'));
  console.log('OK');
});

/** Opens the styles page until it waits for no preview (and so will not reload itself). */
async function stylesPageAtRest(page) {
  const deadline = Date.now() + 120000;
  for (;;) {
    if (Date.now() > deadline) check(false, 'the styles page still waits for previews after 2 minutes');
    try {
      await page.goto(url('/styles'));
    } catch (error) {
      // The page being left reloaded itself at that moment (the book page once its book is
      // made, the styles page once its previews are): let that load finish, and go again.
      if (!/ERR_ABORTED|interrupted by another navigation/.test(String(error))) throw error;
      await page.waitForLoadState('load');
      continue;
    }
    if (await page.locator('[data-pending]').count() === 0) return;
    // The previews are being made by the worker; look again in a moment.
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
