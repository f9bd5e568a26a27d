// Accounts with passkeys in the system's headless Chromium, with a virtual authenticator (the
// DevTools protocol's WebAuthn domain: a platform authenticator that holds resident keys and
// verifies its user): an invitation makes an account with a passkey, the person uploads a
// manuscript, signs out, and signs in again with the passkey alone; a second invitation does
// the same with a password. The invitation, account,
// People, advance-reader links and link pages pass axe-core on a desktop and a phone.
//
//   node accounts.mjs <base url: http://localhost:PORT> <invitation path> <manuscript> <screenshot dir> \
//     <second invitation path>

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { audit } from './axe.mjs';
import { check, launch, run, step } from './harness.mjs';

const [base, invitation, manuscript, shotDir, secondInvitation] = process.argv.slice(2);
if (!base || !invitation || !manuscript || !shotDir || !secondInvitation) {
  console.error('usage: node accounts.mjs <base url> <invitation path> <manuscript> <screenshot dir> <second invitation path>');
  process.exit(2);
}
const url = (p) => new URL(p, base).href;
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const problems = [];

/** axe on the page as it is, at both sizes; a screenshot of each. */
async function accessible(page, name) {
  for (const [size, viewport] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    await page.setViewportSize(viewport);
    const violations = await audit(page);
    check(violations.length === 0, `${name} on a ${size}: ${violations.join('; ')}`);
    await page.screenshot({ path: path.join(shotDir, `${name}-${size}.png`), fullPage: true });
  }
  await page.setViewportSize(DESKTOP);
}

async function main() {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  try {
    const context = await browser.newContext({ viewport: DESKTOP });
    context.setDefaultTimeout(20000);
    const page = await context.newPage();
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));

    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });

    step('the invitation shows its imprint and role, and passes axe');
    await page.goto(url(invitation));
    check((await page.locator('h1').innerText()).includes('riverpress'), 'the invitation does not name its imprint');
    await accessible(page, 'invitation');

    step('make the account with a passkey');
    await page.fill('#name', 'Cleo Marsh');
    await page.fill('#email', 'cleo@example.com');
    await page.fill('#passkey_name', 'Laptop');
    await Promise.all([page.waitForURL(/\/books$/), page.click('#new-account-passkey')]);
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    check(credentials.length === 1 && credentials[0].isResidentCredential, `the authenticator holds ${JSON.stringify(credentials)}`);

    step('upload a manuscript as the new account');
    await page.goto(url('/books/new'));
    await page.setInputFiles('#manuscript', manuscript);
    await Promise.all([
      page.waitForURL(/\/books\/[0-9a-f-]{36}$/, { timeout: 60000 }),
      page.click('#upload button[type=submit]'),
    ]);
    const book = new URL(page.url()).pathname;

    step('once the book is ready, its advance-reader links page and a link\'s page pass axe');
    await page.locator('#advance-links').waitFor({ timeout: 120000 });
    await page.click('#advance-links');
    await page.fill('#reader', 'Jane Roe');
    await Promise.all([page.waitForLoadState('load'), page.click('#new-link button[type=submit]')]);
    const link = await page.inputValue('#link-url');
    check(/\/arc\/arc_[0-9a-f]{64}$/.test(link), `the page shows the link ${link}`);
    await accessible(page, 'links');
    await page.goto(link);
    check((await page.locator('#reader').innerText()) === 'Jane Roe', 'the link\'s page does not name its reader');
    await accessible(page, 'advance-copy');

    step('the account page lists the passkey and passes axe');
    await page.goto(url('/account'));
    const keys = await page.locator('#passkeys tbody tr').allInnerTexts();
    check(keys.length === 1 && keys[0].startsWith('Laptop'), `the passkeys listed: ${keys}`);
    await accessible(page, 'account');

    step('the People page (an owner) passes axe');
    await page.goto(url('/people'));
    await accessible(page, 'people');

    step('sign out, then in again with the passkey alone');
    await Promise.all([page.waitForURL(/\/signin$/), page.click('form.signout button')]);
    await accessible(page, 'signin');
    await Promise.all([page.waitForURL(/\/books$/), page.click('#passkey-signin button')]);
    await page.goto(url(book));
    check((await page.locator('h1').count()) === 1, 'the book is not there after signing in again');
    check(!(await page.locator('text=Not found').count()), 'the book is not found after signing in again');

    step('a passkey the site does not know is refused, with the reason');
    await Promise.all([page.waitForURL(/\/signin$/), page.click('form.signout button')]);
    await cdp.send('WebAuthn.clearCredentials', { authenticatorId });
    await cdp.send('WebAuthn.addCredential', {
      authenticatorId,
      credential: {
        credentialId: Buffer.from('not-a-known-credential').toString('base64'),
        isResidentCredential: true,
        rpId: new URL(base).hostname,
        privateKey: await newPrivateKey(),
        userHandle: Buffer.from('0123456789abcdef').toString('base64'),
        signCount: 1,
      },
    });
    await page.click('#passkey-signin button');
    await page.locator('#passkey-error:not([hidden])').waitFor();
    const refusal = await page.locator('#passkey-error').innerText();
    check(/not known here/.test(refusal), `the refusal says: ${refusal}`);
    check(new URL(page.url()).pathname === '/signin', 'an unknown passkey signed in');

    step('a second invitation makes an account with a password, which uploads and signs in again');
    await page.goto(url(secondInvitation));
    await page.fill('#name', 'Dora Vale');
    await page.fill('#email', 'dora@example.com');
    await page.fill('#password', 'violet kettle orbits paper');
    await Promise.all([page.waitForURL(/\/books$/), page.click('#new-account button[type=submit]')]);
    await page.goto(url('/books/new'));
    await page.setInputFiles('#manuscript', manuscript);
    await Promise.all([
      page.waitForURL(/\/books\/[0-9a-f-]{36}$/, { timeout: 60000 }),
      page.click('#upload button[type=submit]'),
    ]);
    await Promise.all([page.waitForURL(/\/signin$/), page.click('form.signout button')]);
    await page.fill('#email', 'DORA@example.com');
    await page.fill('#password', 'violet kettle orbits paper');
    await Promise.all([page.waitForURL(/\/books$/), page.click('form[action="/signin/password"] button[type=submit]')]);
    check((await page.locator('.books li, .books tr').count()) >= 1, 'her book is not listed after signing in again');

    // The refused sign-in's 401 is expected; nothing else may have failed.
    const unexpected = problems.filter((p) => !p.includes('status of 401'));
    check(unexpected.length === 0, unexpected.join('\n'));
  } finally {
    await browser.close();
  }
  console.log('OK');
}

/** A new P-256 private key, PKCS#8 in base64, as the WebAuthn domain takes it. */
async function newPrivateKey() {
  const { generateKeyPairSync } = await import('node:crypto');
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');
}

run(main);
