// Checks the admin's Tokens page in the system's headless Chromium, as a first admin signed in
// with BINDERY_ADMIN_TOKEN: the form creates a token and shows it once, the list shows it, and
// Revoke revokes it, with no console errors. Prints the token it was shown ("TOKEN …") so the
// test can try it.
//
//   BINDERY_TOKEN=… node tokens.mjs <base url> <screenshot dir>    (an admin's token)

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { check, launch, run, step } from './harness.mjs';

const [base, shotDir] = process.argv.slice(2);
const token = process.env.BINDERY_TOKEN;
if (!base || !shotDir || !token) {
  console.error('usage: BINDERY_TOKEN=… node tokens.mjs <base url> <screenshot dir>');
  process.exit(2);
}
const url = (p) => new URL(p, base).href;

const problems = [];

async function main() {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(20000);
    const page = await context.newPage();
    // The browser logs the refused name's 409 as a failed load; that one is expected.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().includes('status of 409')) problems.push(`console error: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
    page.on('dialog', (d) => d.accept());

    step('sign in with the first admin token; Admin, then Tokens');
    await page.goto(url('/signin'));
    await page.click('#token-signin summary');
    await page.fill('#token', token);
    await Promise.all([page.waitForURL(/\/books$/), page.click('#token-signin button[type=submit]')]);
    await Promise.all([page.waitForURL(/\/admin$/), page.click('nav a[href="/admin"]')]);
    await Promise.all([page.waitForURL(/\/admin\/tokens$/), page.click('.subnav a[href="/admin/tokens"]')]);
    check((await page.locator('#first-admin-hint').count()) === 1, 'no hint to rotate the first admin away');

    step('a bad name is refused, with the reason, and nothing is shown');
    await page.fill('#new-token input[name=name]', 'admin');
    await page.click('#new-token button[type=submit]');
    await page.locator('#new-token-title ~ .error[role=alert]:not([hidden])').waitFor();
    const refused = await page.locator('#new-token-title ~ .error[role=alert]').innerText();
    check(refused.includes('already exists'), `the refusal says: ${refused}`);
    check(await page.locator('#new-token-result').isHidden(), 'a result is shown for a refused name');

    step('create a token: it is shown once');
    await page.fill('#new-token input[name=name]', 'kobo-alice');
    await page.click('#new-token button[type=submit]');
    await page.locator('#new-token-result:not([hidden])').waitFor();
    const shown = await page.inputValue('#new-token-value');
    check(/^bdy_[0-9a-f]{64}$/.test(shown), `the page shows ${shown}`);
    check((await page.locator('#new-token-name').innerText()) === 'kobo-alice', 'the name shown is wrong');
    await page.screenshot({ path: path.join(shotDir, 'tokens-created.png'), fullPage: true });
    console.log(`TOKEN ${shown}`);

    step('Done: the list has it, live, and the page no longer shows the token');
    await Promise.all([page.waitForURL(/\/admin\/tokens$/), page.click('#new-token-result a')]);
    const row = page.locator('#tokens tbody tr', { hasText: 'kobo-alice' });
    check((await row.innerText()).includes('live'), `the row says ${await row.innerText()}`);
    check(!(await page.content()).includes(shown), 'the token is on the page again');

    step('Revoke it');
    await Promise.all([page.waitForLoadState('load'), row.locator('button', { hasText: 'Revoke' }).click()]);
    await row.locator('.badge', { hasText: 'revoked' }).waitFor();
    await page.screenshot({ path: path.join(shotDir, 'tokens-revoked.png'), fullPage: true });

    check(problems.length === 0, `problems:\n  ${problems.join('\n  ')}`);
    console.log('OK');
  } finally {
    await browser.close();
  }
}

run(main);
