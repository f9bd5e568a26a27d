// Checks Bindery's web reader in the system's headless Chromium, as a person on a phone
// would use it: install, read, change settings, go offline, keep reading.
//
//   BINDERY_TOKEN=bdy_… node reader-offline.mjs <url of the reader's index.html> <screenshot dir>
//
// The reader belongs to the token's tenant: each browser context signs in with the token first,
// through the app's sign-in page, as a person would.
//
// Exits 0 when every check passed, 1 with a "FAIL: …" line otherwise. Nothing is downloaded:
// the browser is /usr/bin/chromium (or $CHROMIUM).

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { check, CheckFailed, launch, signIn, step, waitForController } from './harness.mjs';

const [indexUrl, shotDir] = process.argv.slice(2);
if (!indexUrl || !shotDir) {
  console.error('usage: node reader-offline.mjs <base-url-of-reader-index.html> <screenshot-dir>');
  process.exit(2);
}
const token = process.env.BINDERY_TOKEN;
if (!token) {
  console.error('BINDERY_TOKEN is not set');
  process.exit(2);
}
const base = new URL('.', indexUrl).href;
const at = (file) => new URL(file, base).href;

const PHONE = { width: 390, height: 844 };

const errors = [];
function watch(page, label) {
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`${label}: console error: ${msg.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`${label}: uncaught: ${error.message}`));
}

async function shoot(page, name) {
  const file = path.join(shotDir, name);
  await page.screenshot({ path: file });
  console.log(`  screenshot ${file}`);
}

/** The files sw.js promises to pre-cache, read from the server while still online. */
async function precacheList() {
  const response = await fetch(at('sw.js'), { headers: { Authorization: `Bearer ${token}` } });
  check(response.ok, `sw.js: HTTP ${response.status}`);
  const source = await response.text();
  const match = source.match(/const FILES = (\[[\s\S]*?\]);/);
  check(match, 'sw.js has no FILES list');
  const files = JSON.parse(match[1]);
  check(files.includes('index.html') && files.includes('sw.js'), 'FILES lacks index.html or sw.js');
  return files;
}

/** Which of `files` the book's cache does not hold yet. */
async function missingFromCache(page, files) {
  return page.evaluate(
    async ({ files, base }) => {
      const registration = await navigator.serviceWorker.ready;
      const prefix = 'bindery-reader ' + registration.scope + ' ';
      const names = (await caches.keys()).filter((n) => n.startsWith(prefix));
      if (names.length !== 1) return ['(expected one cache for this book, found ' + names.length + ')'];
      const cache = await caches.open(names[0]);
      const cached = new Set((await cache.keys()).map((r) => r.url));
      return files.map((f) => new URL(f, base).href).filter((url) => !cached.has(url));
    },
    { files, base },
  );
}

async function layoutShift(page) {
  return page.evaluate(
    () =>
      new Promise((resolve) => {
        let total = 0;
        new PerformanceObserver((list) => {
          for (const entry of list.getEntries()) if (!entry.hadRecentInput) total += entry.value;
        }).observe({ type: 'layout-shift', buffered: true });
        // A measurement window, not a wait for a condition: the shifts seen in it.
        setTimeout(() => resolve(total), 300);
      }),
  );
}

async function visibleText(page, selector) {
  const element = page.locator(selector).first();
  await element.waitFor({ state: 'visible' });
  return (await element.innerText()).trim();
}

async function settings(page) {
  return page.evaluate(() => ({
    theme: document.documentElement.getAttribute('data-theme'),
    size: document.documentElement.getAttribute('data-size'),
    background: getComputedStyle(document.body).backgroundColor,
    fontSize: parseFloat(getComputedStyle(document.querySelector('main p') || document.body).fontSize),
  }));
}

const isDark = (rgb) => {
  const [r, g, b] = rgb.match(/\d+/g).map(Number);
  return r + g + b < 3 * 80;
};

async function main() {
  await mkdir(shotDir, { recursive: true });
  const browser = await launch();
  try {
    const device = { viewport: PHONE, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

    step('a dark system gets the dark theme without being asked');
    {
      const context = await browser.newContext({ ...device, colorScheme: 'dark', serviceWorkers: 'block' });
      const page = await context.newPage();
      watch(page, 'dark-system');
      await signIn(page, indexUrl, token);
      await page.goto(indexUrl);
      check(isDark((await settings(page)).background), 'prefers-color-scheme: dark did not give a dark page');
      await shoot(page, 'index-dark.png');
      await context.close();
    }

    const context = await browser.newContext({ ...device, colorScheme: 'light' });
    context.setDefaultTimeout(15000);
    const page = await context.newPage();
    watch(page, 'reader');

    step('index.html shows the book and installs the service worker');
    const files = await precacheList();
    await signIn(page, indexUrl, token);
    await page.goto(indexUrl);
    const title = await visibleText(page, 'h1.book-title');
    check(title.length > 0, 'the contents page has no title');
    const entries = await page.locator('.toc a').count();
    check(entries >= 3, `the contents list ${entries} chapters; this check needs a book of 3 or more`);
    check(!isDark((await settings(page)).background), 'a light system did not get the light theme');
    await waitForController(page);
    await page.waitForFunction(
      async ({ files, base }) => {
        const registration = await navigator.serviceWorker.ready;
        const prefix = 'bindery-reader ' + registration.scope + ' ';
        const names = (await caches.keys()).filter((n) => n.startsWith(prefix));
        if (names.length !== 1) return false;
        const cached = new Set((await (await caches.open(names[0])).keys()).map((r) => r.url));
        return files.every((f) => cached.has(new URL(f, base).href));
      },
      { files, base },
      { polling: 200 },
    );
    const missing = await missingFromCache(page, files);
    check(missing.length === 0, `not cached: ${missing.join(', ')}`);
    console.log(`  ${files.length} files cached`);
    check((await layoutShift(page)) < 0.01, 'the contents page shifts while loading');
    await shoot(page, 'index-light.png');

    step('a chapter reads in the light theme');
    await page.locator('.toc a').nth(1).click();
    await page.waitForURL(/chapter-002\.html$/);
    check((await visibleText(page, 'main')).length > 0, 'chapter 2 shows no text');
    check((await layoutShift(page)) < 0.01, 'the chapter page shifts while loading');
    await shoot(page, 'chapter-light.png');

    step('the keyboard alone reaches the text and the settings, with visible focus');
    await page.keyboard.press('Tab');
    check(await page.evaluate(() => document.activeElement.classList.contains('skip')), 'Tab does not reach the skip link first');
    // The bar's links come first (the contents, and the printed pages when the book has a
    // print edition), then the settings.
    let focused = null;
    let tabs = 0;
    while (tabs < 6) {
      await page.keyboard.press('Tab');
      tabs += 1;
      focused = await page.evaluate(() => {
        const el = document.activeElement;
        return { action: el.getAttribute('data-action'), outline: getComputedStyle(el).outlineStyle };
      });
      if (focused.action === 'smaller') break;
    }
    check(focused.action === 'smaller' && focused.outline !== 'none', 'the text-size button has no visible focus');
    await shoot(page, 'focus-light.png');
    for (let i = 0; i < tabs; i += 1) await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Enter');
    check(await page.evaluate(() => document.activeElement.id === 'main'), 'the skip link does not move focus to the text');

    step('dark theme and larger text are remembered across a reload');
    const before = await settings(page);
    await page.locator('button[data-action="theme"]').click();
    await page.locator('button[data-action="larger"]').click();
    await page.locator('button[data-action="larger"]').click();
    const changed = await settings(page);
    check(changed.theme === 'dark' && isDark(changed.background), 'the theme button did not make the page dark');
    check(changed.fontSize > before.fontSize * 1.15, `text did not grow (${before.fontSize}px → ${changed.fontSize}px)`);
    check(
      (await page.locator('button[data-action="theme"]').getAttribute('aria-pressed')) === 'true',
      'the theme button does not say it is pressed',
    );
    await page.reload();
    const reloaded = await settings(page);
    check(reloaded.theme === 'dark' && isDark(reloaded.background), 'the dark theme was forgotten on reload');
    check(Math.abs(reloaded.fontSize - changed.fontSize) < 0.01, 'the text size was forgotten on reload');
    await shoot(page, 'chapter-dark.png');

    step('the footnote reference leads to the note');
    await page.locator('main [role="doc-noteref"]').first().click();
    check(/#fn-/.test(page.url()), 'the note reference did not go to the note');
    check(await page.locator('aside:target').isVisible(), 'the note is not shown');
    await shoot(page, 'footnote-dark.png');

    step('arrow keys turn chapters');
    await page.keyboard.press('ArrowRight');
    await page.waitForURL(/chapter-003\.html$/);
    await page.keyboard.press('ArrowLeft');
    await page.waitForURL(/chapter-002\.html$/);
    await page.keyboard.press('ArrowRight');
    await page.waitForURL(/chapter-003\.html$/);

    step('the reading position is remembered and offered on the contents page');
    await page.evaluate(() =>
      window.scrollTo(0, (document.documentElement.scrollHeight - window.innerHeight) / 2),
    );
    // The reader saves the position a moment after the scroll stops: wait until it has.
    await page.waitForFunction(() =>
      Object.keys(localStorage).some(
        (key) =>
          key.startsWith('bindery-reader:position:') &&
          Math.abs(JSON.parse(localStorage.getItem(key)).fraction - 0.5) < 0.05,
      ),
    );
    await page.goto(indexUrl);
    const resume = page.locator('#continue');
    check((await resume.getAttribute('href')) === 'chapter-003.html', 'Continue reading does not point at chapter 3');
    check((await resume.innerText()).includes('Continue reading'), 'the button does not say Continue reading');
    await shoot(page, 'index-continue-dark.png');
    await resume.click();
    await page.waitForURL(/chapter-003\.html$/);
    await page.waitForLoadState('load');
    // Restored at once, or again at load (late images): wait for it, and if it never comes,
    // the check below says where the page is.
    await page
      .waitForFunction(
        () =>
          Math.abs(window.scrollY / (document.documentElement.scrollHeight - window.innerHeight) - 0.5) < 0.05,
        null,
        { timeout: 5000 },
      )
      .catch(() => {});
    const fraction = await page.evaluate(
      () => window.scrollY / (document.documentElement.scrollHeight - window.innerHeight),
    );
    check(Math.abs(fraction - 0.5) < 0.05, `the position was not restored (at ${fraction.toFixed(2)}, not 0.50)`);

    step('offline: visited and unvisited chapters still read');
    await context.setOffline(true);
    const readsOffline = async (file, navigate) => {
      try {
        await navigate();
      } catch (error) {
        throw new CheckFailed(`offline, ${file} could not be opened: ${error.message.split('\n')[0]}`);
      }
      const chapter = await page.evaluate(() => document.body && document.body.getAttribute('data-chapter'));
      check(chapter === file, `offline, ${file} did not load (the browser shows another page)`);
      check((await visibleText(page, 'main')).length > 0, `offline, ${file} shows no text`);
    };
    await readsOffline('chapter-003.html', () => page.reload());
    const lastFile = files.filter((f) => /^chapter-\d+\.html$/.test(f)).sort().pop();
    await readsOffline(lastFile, () => page.goto(at(lastFile)));
    const imageShown = await page.evaluate(async () => {
      const img = document.querySelector('main img');
      if (!img) return true;
      img.scrollIntoView();
      await img.decode().catch(() => {});
      return img.complete && img.naturalWidth > 0;
    });
    check(imageShown, `offline ${lastFile} shows a broken image`);
    await shoot(page, 'offline-figure-dark.png');
    await page.evaluate(() => window.scrollTo(0, 0));
    await shoot(page, 'offline-chapter-dark.png');
    await page.goto(base);
    check((await visibleText(page, 'h1.book-title')) === title, 'offline, the book folder URL does not show the contents');

    check(errors.length === 0, `console errors:\n  ${errors.join('\n  ')}`);
    await context.close();
  } finally {
    await browser.close();
  }
}

try {
  await main();
  console.log('reader-offline: all checks passed');
} catch (error) {
  const message = error instanceof CheckFailed ? error.message : error.stack || String(error);
  console.error(`FAIL: ${message}`);
  if (errors.length) console.error(`console errors seen:\n  ${errors.join('\n  ')}`);
  process.exit(1);
}
