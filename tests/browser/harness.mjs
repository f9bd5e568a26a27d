// What every browser check here shares: the system's Chromium as the checks start it (never a
// downloaded browser: /usr/bin/chromium, or $CHROMIUM), a check that stops the run with its
// message, the steps printed as they begin, and how a run ends.

import process from 'node:process';
import { chromium } from 'playwright-core';

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** A check that did not hold: the run ends with its message alone, not a stack. */
export class CheckFailed extends Error {}

export function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

export function step(name) {
  console.log(`- ${name}`);
}

/** The system's Chromium, headless. */
export function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ARGS, headless: true });
}

/** Signs the page's context in with `token` through the sign-in form at `origin`, as a person would. */
export async function signIn(page, origin, token) {
  await page.goto(new URL('/signin', origin).href);
  await page.click('#token-signin summary');
  await page.fill('#token', token);
  await Promise.all([page.waitForURL(/\/books$/), page.click('#token-signin button[type=submit]')]);
}

/** Waits until a reader's service worker controls the page (reloading once if the first load beat it). */
export async function waitForController(page) {
  await page.evaluate(() => navigator.serviceWorker.ready);
  try {
    await page.waitForFunction(() => Boolean(navigator.serviceWorker.controller), null, { timeout: 5000 });
  } catch {
    // The first load can finish before the worker claims it; a reload is then controlled.
    await page.reload();
    await page.evaluate(() => navigator.serviceWorker.ready);
  }
  check(
    await page.evaluate(() => Boolean(navigator.serviceWorker.controller)),
    'the service worker never took control of the page',
  );
}

/**
 * Runs a check's `main`: when it throws, prints "FAIL: " and the failed check's message (or
 * anything else's stack) on stdout, where the test reads it, and exits 1.
 */
export function run(main) {
  main().catch((error) => {
    console.log(`FAIL: ${error instanceof CheckFailed ? error.message : error.stack}`);
    process.exit(1);
  });
}
