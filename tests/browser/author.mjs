// An author's way through Bindery in the system's headless Chromium, on a desktop and on a
// phone: sign in, upload the novel and its cover through the form (leaving the language to
// the manuscript), follow it to ready, then the books list with covers and actions; a
// plain-text file named .docx (read, and warned about), a web page named .docx (refused, the
// steps after it skipped, then mended by a corrected manuscript sent from its page as its new
// version), a new version of a ready book and what changed, an empty file (refused by the browser, never sent); an unknown
// address; and the reader on a phone: mid-chapter, the bar that comes and goes, the position,
// the contents, and the way back to the book's page. axe-core checks every page, the reader
// included; every page is photographed.
//
//   node author.mjs <base url> <screenshot dir>
//   env: BINDERY_TOKEN   a token to sign in with
//        BINDERY_NOVEL   the novel (Markdown whose front matter says language: en-GB)
//        BINDERY_NOTES_V2  a new version of the notes (one word added)
//        BINDERY_COVER   its cover (JPEG)
//        BINDERY_NOTES   plain text in a file named notes.docx
//        BINDERY_PAGE    a saved web page in a file named chapter.docx
//        BINDERY_EMPTY   an empty file
//        BINDERY_STEPS   how many steps the pipeline has (the book page lists each)
//
// Prints `BOOKS {json}` (the ids it made, for the API's side of the test) and ends with OK;
// exits 1 with a "FAIL: …" line otherwise. Nothing is downloaded: the browser is
// /usr/bin/chromium (or $CHROMIUM).

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { check, CheckFailed, launch, run, step } from './harness.mjs';
import { audit } from './axe.mjs';

const [base, shotDir] = process.argv.slice(2);
const env = process.env;
const files = {
  novel: env.BINDERY_NOVEL, cover: env.BINDERY_COVER, notes: env.BINDERY_NOTES,
  page: env.BINDERY_PAGE, empty: env.BINDERY_EMPTY, notesV2: env.BINDERY_NOTES_V2,
};
const steps = Number(env.BINDERY_STEPS);
if (!base || !shotDir || !env.BINDERY_TOKEN || !steps || Object.values(files).some((f) => !f)) {
  console.error('usage: see the header of author.mjs');
  process.exit(2);
}
const url = (p) => new URL(p, base).href;
const DESKTOP = { viewport: { width: 1280, height: 900 } };
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const ID = /\/books\/([0-9a-f-]{36})$/;

const problems = [];
function watch(page, label) {
  page.on('console', (msg) => {
    // The browser reports a 404 or 422 answer as an error of its own; the test asks for
    // those (a missing page, a refused upload), and checks what the page says of them.
    if (msg.type() === 'error' && !/status of (404|422)/.test(msg.text())) {
      problems.push(`${label}: console error: ${msg.text()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`${label}: uncaught: ${error.message}`));
  page.on('dialog', async (dialog) => {
    problems.push(`${label}: a ${dialog.type()} opened: ${dialog.message()}`);
    await dialog.dismiss();
  });
}

/** Photographs the page and runs axe on it; violations are collected, and fail the run. */
const audited = [];
/** Whether the image `locator` finds has loaded, once it has finished one way or the other:
 * visible is not loaded. */
async function imageLoaded(locator) {
  return locator.evaluate((img) => img.decode().then(() => true, () => false)
    .then((decoded) => decoded && img.naturalWidth > 0));
}

async function look(page, name, { full = true } = {}) {
  const file = path.join(shotDir, name);
  await page.screenshot({ path: file, fullPage: full });
  const violations = await audit(page);
  audited.push(`${name} ${new URL(page.url()).pathname}`);
  for (const v of violations) problems.push(`axe on ${name} (${page.url()}): ${v}`);
  console.log(`  ${name}: ${violations.length} axe violations`);
}

/** "Go to page" on a reader page (its home or its list of pages): the field filled, the
 * form sent (Enter, or its button tapped on a phone) as the server's own policy allows, and
 * the chapter where the page begins opened at its marker, on screen. */
async function goToPage(page, where, label, shot, { tap = false } = {}) {
  step(`"Go to page" ${label} from ${where}${tap ? ', tapped' : ''}`);
  await page.goto(url(where));
  const field = page.getByLabel('Go to page');
  check((await field.count()) === 1, `${where} has no field labelled "Go to page"`);
  await field.fill(label);
  const wanted = new RegExp(`chapter-\\d+\\.html#page-${label}$`);
  const send = tap ? page.locator('.goto-page button[type=submit]').tap() : field.press('Enter');
  await Promise.all([page.waitForURL(wanted), send]).catch(async (error) => {
    throw new CheckFailed(`"Go to page" ${label} from ${where} stayed at ${page.url()}: ${error.message.split('\n')[0]}`);
  });
  await page.waitForFunction(
    (id) => {
      const marker = document.getElementById(id);
      if (!marker) return false;
      const box = marker.getBoundingClientRect();
      return box.top > 0 && box.top < window.innerHeight;
    },
    `page-${label}`,
  );
  await look(page, shot, { full: false });
}

async function signIn(page) {
  await page.goto(url('/signin'));
  await page.click('#token-signin summary');
  await page.fill('#token', env.BINDERY_TOKEN);
  await Promise.all([page.waitForURL(/\/books$/), page.click('#token-signin button[type=submit]')]);
}

/** Uploads through the form and returns the new book's id, on its page. */
async function upload(page, manuscript, cover, fill) {
  await page.goto(url('/books/new'));
  await page.setInputFiles('#manuscript', manuscript);
  if (cover) await page.setInputFiles('#cover', cover);
  if (fill) await fill();
  await Promise.all([page.waitForURL(ID, { timeout: 60000 }), page.click('#upload button[type=submit]')]);
  return ID.exec(new URL(page.url()).pathname)[1];
}

async function main() {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  const books = {};
  try {
    const desktop = await browser.newContext(DESKTOP);
    desktop.setDefaultTimeout(20000);
    const page = await desktop.newPage();
    watch(page, 'desktop');

    step('sign in; the list is empty and says what to do');
    await page.goto(url('/signin'));
    await look(page, 'desktop-signin.png');
    const help = await page.locator('.lede').innerText();
    check(!/bindery token create/.test(help), `the sign-in help tells an author to run a command: ${help}`);
    await signIn(page);
    check((await page.locator('header nav a[aria-current=page]').innerText()) === 'Books', 'the navigation does not mark Books');
    await look(page, 'desktop-books-empty.png');

    step('the upload form: no default over the manuscript; an empty file is refused before sending');
    await page.goto(url('/books/new'));
    check((await page.locator('#language').inputValue()) === '', 'the language field is pre-filled');
    await look(page, 'desktop-upload.png');
    const posts = [];
    const onRequest = (request) => { if (request.method() === 'POST') posts.push(request.url()); };
    page.on('request', onRequest);
    await page.setInputFiles('#manuscript', files.empty);
    await page.click('#upload button[type=submit]');
    const refusal = await page.locator('#upload-error').innerText();
    check(/empty \(0 bytes\)/.test(refusal), `an empty file was not refused in the browser: ${refusal}`);
    check(posts.length === 0, `an empty file was sent: ${posts}`);
    check((await page.locator('#manuscript').getAttribute('aria-invalid')) === 'true', 'the empty file field is not marked');
    page.off('request', onRequest);
    await look(page, 'desktop-upload-empty-refused.png');

    step('the print settings: a wrong print ISBN is refused at its field, as the API refuses it');
    await page.goto(url('/books/new'));
    for (const field of ['#trim', '#paper', '#bleed', '#print_isbn', '#blurb']) {
      check((await page.locator(field).count()) === 1, `the upload form has no ${field}`);
    }
    await page.setInputFiles('#manuscript', files.novel);
    await page.fill('#print_isbn', '978-0-306-40615-8');
    await page.click('#upload button[type=submit]');
    await page.locator('#upload-error').waitFor();
    const isbnRefusal = await page.locator('#upload-error').innerText();
    check(/print_isbn/.test(isbnRefusal) && /check digit/.test(isbnRefusal), `a wrong print ISBN was refused with: ${isbnRefusal}`);
    check((await page.locator('#print_isbn').getAttribute('aria-invalid')) === 'true', 'the print ISBN field is not marked');
    check(await page.locator('#upload-progress').isHidden(), '"Uploading" stays on screen beside the refusal');
    await look(page, 'desktop-upload-print-isbn-refused.png');

    step('upload the novel with its cover and print settings, language left empty; follow it to ready');
    books.novel = await upload(page, files.novel, files.cover, async () => {
      await page.selectOption('#trim', '5.5x8.5');
      await page.selectOption('#paper', 'cream');
      await page.check('#bleed');
      await page.fill('#print_isbn', '978-0-306-40615-7');
      await page.fill('#blurb', 'A young writer, a friend with a scheme, and a chicken farm in Dorset.');
    });
    await page.locator('#download-epub').waitFor({ timeout: 90000 });
    const cover = page.locator('.book-head img.cover-thumb');
    await cover.waitFor();
    check(await imageLoaded(cover), 'the cover thumbnail did not load');
    const folded = page.locator('section.progress details.steps-done');
    check((await folded.count()) === 1 && !(await folded.evaluate((d) => d.open)), 'the finished progress is not folded');
    check((await folded.locator('summary').innerText()).includes(`All ${steps} steps done`), 'the folded progress does not say it is done');
    const language = await page.locator('section.about dt', { hasText: 'Language' }).locator('xpath=following-sibling::dd[1]').innerText();
    check(/en-GB/.test(language) && /from the manuscript/.test(language), `the manuscript's language was not kept, or not said: ${language}`);
    check((await page.locator('section.notice').count()) === 0, 'a well-named file got a mismatch notice');
    await look(page, 'desktop-book-ready.png');

    step('the list shows the cover, Read and Download');
    await page.goto(url('/books'));
    const item = page.locator('.books li').first();
    check(await imageLoaded(item.locator('img.cover-thumb')), 'no cover in the list');
    check((await item.locator('a', { hasText: 'Read' }).getAttribute('href')) === `/books/${books.novel}/reader/`, 'no Read in the list');
    check((await item.locator('a', { hasText: 'Download EPUB' }).getAttribute('href')) === `/books/${books.novel}/epub`, 'no Download in the list');
    await look(page, 'desktop-books.png');

    step('plain text named notes.docx: read as text, and the page says so');
    books.notes = await upload(page, files.notes);
    await page.locator('#download-epub').waitFor({ timeout: 90000 });
    const notice = await page.locator('section.notice').innerText();
    check(/“notes\.docx” is named as a Word document \(\.docx\) but is plain text/.test(notice), `no mismatch notice: ${notice}`);
    check((await page.locator('.warnings li[data-code=format_mismatch]').count()) === 1, 'the report does not list the mismatch');
    await look(page, 'desktop-book-mismatch.png');

    step('a web page named chapter.docx: refused, the steps after it skipped, the advice once');
    books.page = await upload(page, files.page);
    await page.locator('section.failure').waitFor({ timeout: 60000 });
    const failure = await page.locator('section.failure').innerText();
    check(/“chapter\.docx” is not a Word document \(\.docx\), as its name says: it is a web page/.test(failure), `no mismatch failure: ${failure}`);
    const advice = 'Download or export the manuscript again';
    check(failure.split(advice).length === 2, `the advice is not given exactly once: ${failure}`);
    const states = await page.locator('.steps li').evaluateAll((items) => items.map((li) => `${li.dataset.step}=${li.dataset.state}:${li.querySelector('.step-state').textContent}`));
    check(states[0] === 'ingest=failed:failed', `ingest is not failed: ${states}`);
    check(states.slice(1).every((s) => s.endsWith('=skipped:skipped')), `later steps are not skipped: ${states}`);
    // The log ends with the reason, in the words of the page (`reason=…`).
    const last = await page.locator('.log-lines li').last().innerText();
    check(/reason=“chapter\.docx” is not a Word document/.test(last), `the log does not end with the reason in words: ${last}`);
    await look(page, 'desktop-book-refused.png');

    step('a corrected manuscript, sent from the refused book\'s own page as its new version, mends it');
    const mend = page.locator('section.failure a', { hasText: 'Upload a corrected manuscript' });
    check((await mend.getAttribute('href')) === '#new-version', 'the refused book does not lead to its new version');
    check(await page.locator('#new-version').evaluate((d) => d.open), 'the new-version form is not open on a refused book');
    await page.setInputFiles('#manuscript', files.notes);
    await page.click('#upload button[type=submit]');
    // Back on the book's page, which follows the new version live until it is ready.
    await page.locator('#download-epub').waitFor({ timeout: 90000 });
    check(ID.exec(new URL(page.url()).pathname)[1] === books.page, `the new version led to ${page.url()}`);
    const versions = await page.locator('ul.versions li').evaluateAll((items) => items.map((li) => `${li.dataset.revision}:${li.dataset.status}`));
    check(versions.join(' ') === '2:ready 1:failed', `the versions listed are ${versions}`);
    check((await page.locator('section.failure').count()) === 0, 'the mended book still says what went wrong');
    await look(page, 'desktop-book-mended.png');

    step('a new version of a ready book: it builds while the book serves the first, then the page says what changed');
    await page.goto(url(`/books/${books.notes}`));
    await page.click('#new-version summary');
    await page.setInputFiles('#manuscript', files.notesV2);
    await page.click('#upload button[type=submit]');
    const changed = page.locator('ul.versions a', { hasText: 'What changed' });
    // The page follows the version building beside the one it shows, and shows it when built.
    await changed.waitFor({ timeout: 90000 }).catch(() => {});
    check((await changed.count()) === 1, 'the book\'s page did not show the new version once built, nor what it changed');
    await look(page, 'desktop-book-two-versions.png');
    await Promise.all([page.waitForURL(/\/revisions\/2\/changes$/), changed.click()]);
    check((await page.locator('.diff del').count()) === 0, `words out: ${await page.locator('.diff del').allInnerTexts()}`);
    const wordsIn = (await page.locator('.diff ins').allInnerTexts()).join('|').trim();
    check(wordsIn === 'revised', `the words in: ${wordsIn}`);
    await look(page, 'desktop-what-changed.png');

    step('an unknown address: the app\'s own page, with the navigation; the API answers JSON');
    const missing = await page.goto(url('/no/such/page'));
    check(missing.status() === 404, `an unknown page answered ${missing.status()}`);
    check((await page.locator('h1').innerText()) === 'Not found', 'not the app\'s Not found page');
    check((await page.locator('header nav a[href="/books/new"]').count()) === 1, 'the Not found page has no navigation');
    await look(page, 'desktop-not-found.png');
    for (const p of ['/api/v1/no-such-route', '/api/nothing']) {
      const answer = await page.request.get(url(p));
      const body = await answer.json();
      check(answer.status() === 404 && body.error && body.error.code === 'not_found', `${p} answered ${answer.status()} ${JSON.stringify(body)}`);
    }

    step('the reader on a desktop: the way back, the EPUB, chapters with their subtitles');
    await page.goto(url(`/books/${books.novel}/reader/`));
    check((await page.locator('.book-links a.book-page').getAttribute('href')) === `/books/${books.novel}`, 'the reader has no link to the book\'s page');
    check((await page.locator('.book-links a.download').getAttribute('href')) === `/books/${books.novel}/epub`, 'the reader has no EPUB download');
    const toc = await page.locator('.toc a').allInnerTexts();
    check(toc.some((t) => /^I\s*:?\s*A Letter with a Postscript$/.test(t.replace(/\s+/g, ' ').trim())), `the contents have no subtitles: ${toc.slice(0, 4)}`);
    await look(page, 'desktop-reader-contents.png');
    await page.locator('.toc a').nth(3).click();
    await page.waitForLoadState('load');
    await look(page, 'desktop-reader-chapter.png', { full: false });
    await goToPage(page, `/books/${books.novel}/reader/`, '50', 'desktop-reader-page-50.png');
    await goToPage(page, `/books/${books.novel}/reader/pages.html`, '50', 'desktop-reader-pages-50.png');
    const epub = await page.request.get(url(`/books/${books.novel}/epub`));
    check(epub.status() === 200 && epub.headers()['content-type'] === 'application/epub+zip', `the reader's EPUB link answered ${epub.status()}`);
    await desktop.close();

    const phone = await browser.newContext(PHONE);
    phone.setDefaultTimeout(20000);
    const small = await phone.newPage();
    watch(small, 'phone');

    step('on a phone: the list, the book, the upload form');
    await signIn(small);
    const signOutLines = await small.locator('.signout button').evaluate((b) => {
      const range = document.createRange();
      range.selectNodeContents(b);
      return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
    });
    check(signOutLines === 1, `"Sign out" takes ${signOutLines} lines on a phone`);
    await look(small, 'phone-books.png');
    await small.goto(url(`/books/${books.novel}`));
    const progressHeight = await small.locator('section.progress').evaluate((s) => s.getBoundingClientRect().height);
    check(progressHeight < 200, `the finished progress takes ${progressHeight}px of the phone's screen`);
    await look(small, 'phone-book-ready.png');
    await small.goto(url(`/books/${books.page}`));
    await look(small, 'phone-book-mended.png');
    await small.goto(url(`/books/${books.notes}`));
    await look(small, 'phone-book-mismatch.png');
    await small.goto(url(`/books/${books.notes}/revisions/2/changes`));
    check((await small.locator('.diff ins').count()) === 1, 'what changed shows no word in on a phone');
    await look(small, 'phone-what-changed.png');
    await small.goto(url('/books/new'));
    await look(small, 'phone-upload.png');
    for (const p of ['/books', `/books/${books.novel}`, `/books/${books.notes}`, `/books/${books.notes}/revisions/2/changes`, '/books/new']) {
      await small.goto(url(p));
      const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(overflow <= 0, `${p} scrolls sideways on a phone by ${overflow}px`);
    }
    const missingOnPhone = await small.goto(url('/books/00000000-0000-4000-8000-000000000000'));
    check(missingOnPhone.status() === 404, 'another book is not a 404');
    check((await small.locator('header nav a[href="/books"]').count()) === 1, 'the Not found page has no navigation on a phone');
    await look(small, 'phone-not-found.png');

    step('the reader on a phone, mid-chapter: the bar goes, comes back, and leads out');
    await small.goto(url(`/books/${books.novel}/reader/`));
    await look(small, 'phone-reader-contents.png');
    const chapters = await small.locator('.toc a').count();
    await Promise.all([small.waitForURL(/chapter-\d+\.html$/), small.locator('.toc a').nth(6).tap()]);
    const chapterFile = new URL(small.url()).pathname.split('/').pop();
    await small.waitForLoadState('load');
    const bar = small.locator('header.bar');
    const position = async () => (await small.locator('.bar-position').innerText()).replace(/\s+/g, ' ').trim();
    check(new RegExp(`^(Chapter )?7 of ${chapters}$`).test(await position()), `the bar does not say where the chapter is: ${await position()}`);
    // Reading on: the page moves under the reader's finger (a wheel here), and the bar steps aside.
    for (let i = 0; i < 6; i += 1) await small.mouse.wheel(0, 400);
    await small.waitForFunction(() => document.querySelector('header.bar').classList.contains('bar-away'));
    check(/ · \d+%$/.test(await position()), `the bar does not say how far through the chapter: ${await position()}`);
    await look(small, 'phone-reader-reading.png', { full: false });
    // Back up a little: the bar returns, with the position.
    await small.mouse.wheel(0, -150);
    await small.waitForFunction(() => !document.querySelector('header.bar').classList.contains('bar-away'));
    // Once it has slid back (a fifth of a second), it sits at the top of the screen.
    await small.waitForFunction(() => Math.abs(document.querySelector('header.bar').getBoundingClientRect().top) <= 1)
      .catch(async () => {
        throw new CheckFailed(`the returned bar is not at the top of the screen (${await bar.evaluate((b) => b.getBoundingClientRect().top)}px)`);
      });
    await look(small, 'phone-reader-bar.png', { full: false });
    // A tap on the text (mid-screen, where the page does not move) puts it away, another
    // brings it back.
    await small.touchscreen.tap(195, 560);
    await small.waitForFunction(() => document.querySelector('header.bar').classList.contains('bar-away'));
    await small.touchscreen.tap(195, 560);
    await small.waitForFunction(() => !document.querySelector('header.bar').classList.contains('bar-away'));
    await goToPage(small, `/books/${books.novel}/reader/`, '50', 'phone-reader-page-50.png', { tap: true });
    await goToPage(small, `/books/${books.novel}/reader/pages.html`, '50', 'phone-reader-pages-50.png', { tap: true });
    await small.goto(url(`/books/${books.novel}/reader/${chapterFile}`));
    // From here to the contents, and from there to the book's page.
    await Promise.all([small.waitForURL(/\/reader\/index\.html$/), small.locator('.bar-home').tap()]);
    await Promise.all([small.waitForURL(ID), small.locator('.book-links a.book-page').tap()]);
    check(ID.exec(new URL(small.url()).pathname)[1] === books.novel, `the way out led to ${small.url()}`);
    await phone.close();

    check(problems.length === 0, `problems while browsing:\n  ${problems.join('\n  ')}`);
    console.log(`axe found no violation on ${audited.length} pages`);
    console.log(`BOOKS ${JSON.stringify(books)}`);
    console.log('OK');
  } finally {
    await browser.close();
  }
}

run(main);
