// Checks Bindery's app in the system's headless Chromium, as an author would use it: sign in
// with the keyboard, upload the corpus novel (a real upload progress bar), watch it convert
// live, download the EPUB, open the reader; then a hostile manuscript whose <script> and
// onerror= payloads must run nowhere, in the app or in the reader; and the pages on a phone.
//
//   node app.mjs <base url> <screenshot dir>
//   env: BINDERY_TOKEN     a token to sign in with
//        BINDERY_NOVEL     the manuscript to upload
//        BINDERY_HOSTILE   a manuscript full of script payloads
//        BINDERY_RESUME    JSON argv of a command that resumes the (paused) books queue
//        BINDERY_STEPS     how many steps the pipeline has (the book page lists each)
//
// Exits 0 when every check passed, 1 with a "FAIL: …" line otherwise. Nothing is downloaded:
// the browser is /usr/bin/chromium (or $CHROMIUM).

import { execFileSync } from 'node:child_process';
import { mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { check, launch, run, step } from './harness.mjs';

const [base, shotDir] = process.argv.slice(2);
const { BINDERY_TOKEN: token, BINDERY_NOVEL: novel, BINDERY_HOSTILE: hostile, BINDERY_RESUME: resume } =
  process.env;
const steps = Number(process.env.BINDERY_STEPS);
if (!base || !shotDir || !token || !novel || !hostile || !resume || !steps) {
  console.error('usage: see the header of app.mjs');
  process.exit(2);
}
const url = (p) => new URL(p, base).href;

const DESKTOP = { viewport: { width: 1280, height: 900 } };
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

const problems = [];
/** Set while the test asks to delete: takes the confirmation's words, and accepts it. */
let confirming = null;

function watch(page, label) {
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`${label}: console error: ${msg.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`${label}: uncaught: ${error.message}`));
  page.on('dialog', async (dialog) => {
    // The app asks before deleting; nothing else may open a dialog, least of all a payload.
    if (confirming && dialog.type() === 'confirm') {
      confirming(dialog.message());
      confirming = null;
      await dialog.accept();
      return;
    }
    problems.push(`${label}: a ${dialog.type()} opened: ${dialog.message()}`);
    await dialog.dismiss();
  });
}

async function shoot(page, name) {
  const file = path.join(shotDir, name);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`  screenshot ${file}`);
}

async function signInWithKeyboard(page) {
  await page.goto(url('/'));
  check(new URL(page.url()).pathname === '/signin', `/ did not lead to sign-in: ${page.url()}`);
  // The address field has focus on arrival; the token's form is a few tabs on, folded: open it
  // with Enter, then type and press Enter, no mouse.
  await page.waitForFunction(() => document.activeElement?.id === 'email');
  for (let i = 0; i < 10 && !(await page.evaluate(() => document.activeElement?.matches('#token-signin summary'))); i++) {
    await page.keyboard.press('Tab');
  }
  await page.keyboard.press('Enter');
  await page.keyboard.press('Tab');
  await page.waitForFunction(() => document.activeElement?.id === 'token');
  await page.keyboard.type('bdy_mistyped');
  // The answer is a new page: wait for it, not for the one already loaded.
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/signin'),
    page.keyboard.press('Enter'),
  ]);
  await page.waitForLoadState('load');
  const error = await page.locator('#token-error[role=alert]').innerText();
  check(/not valid/.test(error), `a wrong token did not say so: ${error}`);
  // Keys typed before the new page has put the focus in its field would be lost.
  await page.waitForFunction(() => document.activeElement?.id === 'token');
  await page.keyboard.type(token);
  await Promise.all([page.waitForURL(/\/books$/), page.keyboard.press('Enter')]);
}

/** Uploads `file` through the form with a slowed network, and returns the progress values seen. */
async function upload(page, file, fields = {}) {
  await page.goto(url('/books/new'));
  check(await page.locator('#upload-progress').isHidden(), 'the upload bar shows before any upload');
  await page.setInputFiles('#manuscript', file);
  for (const [name, value] of Object.entries(fields)) await page.fill(`#${name}`, value);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  // ~64 KiB/s up: the corpus novel takes seconds, so the bar has time to move.
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: 5, downloadThroughput: -1, uploadThroughput: 64 * 1024,
  });
  const seen = new Set();
  const sampler = setInterval(async () => {
    try {
      seen.add(await page.locator('#upload-bar').evaluate((bar) => bar.value));
    } catch { /* navigated away */ }
  }, 100);
  await Promise.all([page.waitForURL(/\/books\/[0-9a-f-]{36}$/, { timeout: 60000 }), page.click('#upload button[type=submit]')]);
  clearInterval(sampler);
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1,
  });
  return [...seen];
}

async function main() {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  try {
    const context = await browser.newContext({ ...DESKTOP, acceptDownloads: true });
    context.setDefaultTimeout(20000);
    const page = await context.newPage();
    watch(page, 'app');

    step('sign in with the keyboard alone');
    await signInWithKeyboard(page);
    check((await page.locator('h1').innerText()) === 'Your books', 'not on the books page after sign-in');
    await shoot(page, 'books-empty.png');

    step('upload the corpus novel: the progress bar moves');
    const seen = await upload(page, novel);
    const between = seen.filter((v) => v > 0 && v < 100);
    check(between.length > 0, `the upload bar never showed a value between 0 and 100 (saw ${seen})`);
    console.log(`  upload progress seen: ${[...new Set(seen)].sort((a, b) => a - b).join(', ')}`);

    step('the book page shows the queued steps, then live progress to ready');
    const book = page.locator('#book');
    check((await book.getAttribute('data-status')) === 'processing', 'the book was not processing (the queue should be paused)');
    check((await page.locator('.steps li').count()) === steps, `the page does not list the ${steps} steps`);
    await shoot(page, 'book-queued.png');
    execFileSync(JSON.parse(resume)[0], JSON.parse(resume).slice(1), { stdio: 'ignore' });
    // No reload by the test: the page follows the book over Server-Sent Events.
    await page.locator('#download-epub').waitFor({ timeout: 60000 });
    check((await page.locator('.badge').first().innerText()) === 'ready', 'the badge does not say ready');
    const states = await page.locator('.steps li').evaluateAll((items) => items.map((li) => li.dataset.state));
    check(states.every((s) => s === 'completed'), `not every step completed: ${states}`);
    check((await page.locator('.report').innerText()).includes('Words'), 'no report on the page');
    await shoot(page, 'book-ready.png');

    step('download the EPUB');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-epub')]);
    const saved = path.join(shotDir, 'downloaded.epub');
    await download.saveAs(saved);
    const bytes = await readFile(saved);
    check(bytes.subarray(0, 2).toString() === 'PK', 'the download is not a zip');
    check(bytes.includes(Buffer.from('application/epub+zip')), 'the download has no EPUB mimetype');
    check((await stat(saved)).size > 50000, 'the EPUB is implausibly small');
    check(/\.epub$/.test(download.suggestedFilename()), `download named ${download.suggestedFilename()}`);

    step('open the web reader');
    await Promise.all([page.waitForURL(/\/reader\/$/), page.click('#open-reader')]);
    const title = await page.locator('h1.book-title').innerText();
    check(/Love Among the Chickens/.test(title), `the reader shows ${title}`);
    await shoot(page, 'reader.png');

    step('a hostile manuscript runs nothing in the app or the reader');
    await page.goto(url('/books'));
    // The queue is running now; still, the page follows it to the end.
    await upload(page, hostile, { author: '<img src=x onerror=alert("author")>' });
    await page.locator('#download-epub').waitFor({ timeout: 60000 });
    const heading = await page.locator('h1').first().innerText();
    check(heading.includes('<script>'), `the hostile title is not shown as text: ${heading}`);
    check((await page.locator('.byline').innerText()).includes('onerror'), 'the hostile author is not shown as text');
    await shoot(page, 'hostile-book.png');
    await page.goto(url('/books'));
    check((await page.locator('.books li').count()) === 2, 'the list does not show both books');
    await Promise.all([page.waitForURL(/\/books\/[0-9a-f-]{36}$/), page.locator('.books a').first().click()]);
    await Promise.all([page.waitForURL(/\/reader\/$/), page.click('#open-reader')]);
    const chapters = await page.locator('.toc a').evaluateAll((links) => links.map((a) => a.href));
    check(chapters.length > 0, 'the hostile reader has no chapters');
    for (const chapter of chapters) {
      await page.goto(chapter);
      await page.waitForLoadState('load');
    }
    await shoot(page, 'hostile-reader.png');
    const ran = await page.evaluate(() => window.__pwned === true);
    check(!ran, 'a payload set window.__pwned');

    step('delete the hostile book: asked first, naming it and all it made; the list says it went');
    const hostileBook = chapters[0].match(/\/books\/([0-9a-f-]{36})\//)[1];
    await page.goto(url(`/books/${hostileBook}`));
    let asked = '';
    confirming = (message) => { asked = message; };
    await Promise.all([page.waitForURL(/\/books\?deleted=/), page.click('section.danger button[type=submit]')]);
    check(asked.includes('<script>') && /print edition/.test(asked) && /cannot be undone/.test(asked),
      `the confirmation said: ${asked}`);
    const notice = (await page.locator('p.notice[role=status]').innerText()).trim();
    check(notice.startsWith('Deleted') && notice.includes('<script>'), `after the delete the list says: ${notice}`);
    check((await page.locator('.books li').count()) === 1, 'the deleted book is still listed');
    const gone = await page.request.get(url(`/api/v1/books/${hostileBook}`));
    check(gone.status() === 404, `the deleted book answers ${gone.status()}`);
    await shoot(page, 'deleted.png');

    step('the pages fit a phone screen');
    const phone = await browser.newContext(PHONE);
    const small = await phone.newPage();
    watch(small, 'phone');
    await signInWithKeyboard(small);
    for (const p of ['/books', '/books/new']) {
      await small.goto(url(p));
      const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(overflow <= 0, `${p} scrolls sideways on a phone by ${overflow}px`);
      await shoot(small, `phone${p.replaceAll('/', '-')}.png`);
    }
    await small.goto(url('/books'));
    await small.locator('.books a').first().click();
    await small.waitForURL(/\/books\/[0-9a-f-]{36}$/);
    const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, `the book page scrolls sideways on a phone by ${overflow}px`);
    await shoot(small, 'phone-book.png');
    await phone.close();

    check(problems.length === 0, `problems while browsing:\n  ${problems.join('\n  ')}`);
    console.log('OK');
  } finally {
    await browser.close();
  }
}

run(main);
