// A book made in three editions, on its page in the system's headless Chromium, on a desktop
// and on a phone: the page lists each edition with its pages, its two downloads and its
// printer's check, each download answers its edition's PDF, and axe-core finds nothing.
//
//   node editions.mjs <base url> <screenshot dir>
//   env: BINDERY_TOKEN   a token to sign in with
//        BINDERY_BOOK    the id of a ready book of that token's tenant, made in a paperback,
//                        a hardcover and a large-print edition for a printer
//
// Ends with OK; exits 1 with a "FAIL: …" line otherwise.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { check, launch, run, signIn, step } from './harness.mjs';
import { audit } from './axe.mjs';

const [base, shotDir] = process.argv.slice(2);
const { BINDERY_TOKEN: token, BINDERY_BOOK: book } = process.env;
if (!base || !shotDir || !token || !book) {
  console.error('usage: see the header of editions.mjs');
  process.exit(2);
}
const url = (p) => new URL(p, base).href;
const DESKTOP = { viewport: { width: 1280, height: 900 } };
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const EDITIONS = ['paperback', 'hardcover', 'large_print'];

run(async () => {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  const problems = [];
  try {
    for (const [label, device] of [['desktop', DESKTOP], ['phone', PHONE]]) {
      const context = await browser.newContext(device);
      const page = await context.newPage();
      page.on('pageerror', (error) => problems.push(`${label}: uncaught: ${error.message}`));
      await signIn(page, base, token);
      step(`${label}: the book page lists the editions`);
      await page.goto(url(`/books/${book}`));
      const sections = page.locator('#print-editions section.edition');
      check(await sections.count() === 3, `${await sections.count()} editions listed`);
      const sizes = {};
      for (const edition of EDITIONS) {
        const section = page.locator(`#print-editions section[data-edition=${edition}]`);
        check(await section.count() === 1, `no section for the ${edition}`);
        const text = await section.innerText();
        check(/\d+ pages/.test(text), `the ${edition} says no page count: ${text}`);
        const check_ = section.locator('.printer-check');
        check(await check_.count() === 1, `no printer check for the ${edition}`);
        check(await check_.locator('tr[data-rule]').count() >= 10, `the ${edition}'s check lists few rules`);
        const links = section.locator('a[download]');
        check(await links.count() === 2, `the ${edition} offers ${await links.count()} downloads`);
        for (let i = 0; i < 2; i += 1) {
          const href = await links.nth(i).getAttribute('href');
          const answer = await page.request.get(url(href));
          check(answer.ok() && answer.headers()['content-type'] === 'application/pdf', `${href}: ${answer.status()}`);
          const body = await answer.body();
          check(body.subarray(0, 5).toString() === '%PDF-', `${href} is not a PDF`);
          if (i === 0) sizes[edition] = body.length;
        }
      }
      check(sizes.large_print !== sizes.paperback, 'the large-print interior is the paperback\'s');
      await page.locator('#print-editions').scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(shotDir, `${label}-editions.png`), fullPage: true });
      for (const v of await audit(page)) problems.push(`axe on the ${label} book page: ${v}`);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  check(problems.length === 0, problems.join('\n'));
  console.log('OK');
});
