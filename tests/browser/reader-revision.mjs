// Checks that Bindery's web reader, installed on a phone, moves between versions of its book
// whole: offline it stays on the version it saved, every page of it; back online it takes the
// next version, every page of that, and nothing of the first.
//
//   BINDERY_TOKEN=bdy_… node reader-revision.mjs <url of the reader's index.html> \
//       <the next version's manuscript> <screenshot dir>
//
// The book's chapters each say which version they are ("first version", "second version");
// the next version has one chapter more. Being offline is a real cut: the browser reaches the
// server only through a proxy this script runs, which it closes (and every connection with it)
// while the phone is offline, so neither the pages nor the service worker's own fetches, nor
// the browser's check for a new worker, reach the server. The next version is sent to the
// server directly, as the author would from elsewhere, while the phone is offline.
//
// Exits 0 when every check passed, 1 with a "FAIL: …" line otherwise.

import { readFile, mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import process from 'node:process';
import { check, launch, run, signIn, step, waitForController } from './harness.mjs';

const [indexUrl, nextManuscript, shotDir] = process.argv.slice(2);
const token = process.env.BINDERY_TOKEN;
if (!indexUrl || !nextManuscript || !shotDir || !token) {
  console.error('usage: BINDERY_TOKEN=… node reader-revision.mjs <reader index.html url> <manuscript> <screenshot dir>');
  process.exit(2);
}
const server = new URL(indexUrl);
const bookId = server.pathname.split('/')[2];
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

/** A TCP proxy to the server that can be cut, as a phone's network is. */
function cuttableProxy() {
  const sockets = new Set();
  let connected = true;
  const track = (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const proxy = net.createServer((client) => {
    track(client);
    if (!connected) return client.destroy();
    const upstream = net.connect(Number(server.port), server.hostname);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return {
    listen: () => new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve(proxy.address().port))),
    cut() {
      connected = false;
      for (const socket of sockets) socket.destroy();
    },
    mend() {
      connected = true;
    },
    close: () => new Promise((resolve) => proxy.close(resolve)),
  };
}

async function api(pathname, init = {}) {
  const response = await fetch(new URL(pathname, server).href, {
    ...init,
    headers: { Authorization: `Bearer ${token}`, ...(init.headers || {}) },
  });
  check(response.ok, `${init.method || 'GET'} ${pathname}: HTTP ${response.status} ${await response.clone().text()}`);
  return response.json();
}

/** Sends the next version and waits for the book to show it. */
async function revise() {
  const form = new FormData();
  form.append('manuscript', new Blob([await readFile(nextManuscript)]), path.basename(nextManuscript));
  const accepted = await api(`/api/v1/books/${bookId}/revisions`, { method: 'POST', body: form });
  const deadline = Date.now() + 120000;
  for (;;) {
    const book = await api(`/api/v1/books/${bookId}`);
    if (book.revision === accepted.number && book.status === 'ready') return accepted.number;
    const revision = await api(`/api/v1/books/${bookId}/revisions/${accepted.number}`);
    check(revision.status !== 'failed', `the next version failed: ${JSON.stringify(revision)}`);
    check(Date.now() < deadline, `the book did not switch to the next version: ${JSON.stringify(book)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Which version each page of the book as the phone shows it says it is, by page. */
async function versions(page, base) {
  await page.goto(new URL('index.html', base).href);
  const chapters = await page.locator('.toc a').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
  const seen = { 'index.html': said(await page.locator('body').innerText()) };
  for (const chapter of chapters) {
    await page.goto(new URL(chapter, base).href);
    check(
      (await page.evaluate(() => document.body.getAttribute('data-chapter'))) === chapter,
      `${chapter} did not load (the browser shows another page)`,
    );
    seen[chapter] = said(await page.locator('main').innerText());
  }
  return seen;
}

function said(text) {
  const first = text.includes('first version');
  const second = text.includes('second version');
  return first && second ? 'both' : first ? 'first' : second ? 'second' : 'neither';
}

/** Every page says `version`, the contents included; the pages, for the message. */
function allSay(seen, version, when) {
  const wrong = Object.entries(seen).filter(([file, said]) => file !== 'index.html' && said !== version);
  check(wrong.length === 0, `${when}, these pages are not the ${version} version: ${JSON.stringify(seen)}`);
  return Object.keys(seen).length;
}

async function cacheCount(page) {
  return page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    const prefix = 'bindery-reader ' + registration.scope + ' ';
    return (await caches.keys()).filter((n) => n.startsWith(prefix)).length;
  });
}

run(async () => {
  await mkdir(shotDir, { recursive: true });
  const proxy = cuttableProxy();
  const port = await proxy.listen();
  const base = new URL(server.pathname.replace(/[^/]*$/, ''), `http://127.0.0.1:${port}`).href;
  const browser = await launch();
  const errors = [];
  try {
    const context = await browser.newContext({ ...PHONE });
    context.setDefaultTimeout(15000);
    const page = await context.newPage();
    page.on('pageerror', (error) => errors.push(`uncaught: ${error.message}`));

    step('the reader is installed at the first version');
    await signIn(page, base, token);
    await page.goto(new URL('index.html', base).href);
    await waitForController(page);
    // Saved whole: every page of it then reads with the network cut.
    await page.waitForFunction(
      async () => {
        const registration = await navigator.serviceWorker.ready;
        return registration.active && registration.active.state === 'activated';
      },
      null,
      { polling: 200 },
    );
    const online = await versions(page, base);
    const firstPages = allSay(online, 'first', 'online at the first version');

    step('offline, the next version is published; the phone stays on the first, whole');
    await context.setOffline(true);
    proxy.cut();
    const number = await revise();
    console.log(`  the book now shows revision ${number}`);
    const offline = await versions(page, base);
    check(Object.keys(offline).length === firstPages, `offline, the contents changed: ${JSON.stringify(offline)}`);
    allSay(offline, 'first', 'offline after the next version was published');
    await page.screenshot({ path: path.join(shotDir, 'offline-first-version.png') });

    step('online again, it moves to the next version by itself, and the page shown with it');
    await page.goto(new URL(Object.keys(offline).pop(), base).href);
    proxy.mend();
    await context.setOffline(false);
    // The page reloads itself when the new version takes over: look until it shows it.
    const deadline = Date.now() + 60000;
    for (;;) {
      const text = await page
        .locator('main')
        .innerText({ timeout: 1000 })
        .catch(() => '');
      if (said(text) === 'second') break;
      check(Date.now() < deadline, `online again, the page still shows the ${said(text)} version after 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    check((await cacheCount(page)) === 1, 'the first version\'s saved copy was not replaced');

    step('offline again, every page is the next version, its new chapter included');
    await context.setOffline(true);
    proxy.cut();
    const after = await versions(page, base);
    check(Object.keys(after).length === firstPages + 1, `the next version's new chapter is not there: ${JSON.stringify(after)}`);
    allSay(after, 'second', 'offline after moving to the next version');
    await page.screenshot({ path: path.join(shotDir, 'offline-second-version.png') });

    check(errors.length === 0, `errors on the pages:\n  ${errors.join('\n  ')}`);
    await context.close();
  } finally {
    await browser.close();
    await proxy.close();
  }
  console.log('reader-revision: all checks passed');
});
