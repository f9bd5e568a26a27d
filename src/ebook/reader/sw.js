// Bindery web reader: the service worker of one book, generated with the book.
//
// On install it stores every file of the book, so that after one visit the whole book reads
// offline. Files are served from that cache first and from the network only when missing.
// The cache's name holds this book's scope (its URL) and the build's version, so a rebuilt
// book gets a fresh cache, and two books on one site never delete each other's.
//
// A book on a server can be revised: the server switches every file of the book to a new
// version at once, and may do so while this worker is saving them. Each file is checked
// against the digest this build gave it, so a cache holds one version whole or is not made;
// the worker of the new version, fetched at the next visit, saves that one.
'use strict';

const VERSION = '__VERSION__';
const FILES = __FILES__;
// SHA-256 of each file but this one, as this build wrote it.
const DIGESTS = __DIGESTS__;
// The page a server may hand one visitor with a line of their own (an advance reader copy's,
// one paragraph with this id): its digest is the page's without that line.
const STAMPED = '__STAMPED__';
const STAMP = /<p id="__STAMP_ID__"[^\n]*<\/p>\n/;

const SCOPE = self.registration.scope;
const PREFIX = 'bindery-reader ' + SCOPE + ' ';
const CACHE = PREFIX + VERSION;

self.addEventListener('install', (event) => {
  event.waitUntil(
    // Nothing is stored until every file has arrived as this build made it.
    Promise.all(FILES.map(fetchAsBuilt))
      .then(async (responses) => {
        const cache = await caches.open(CACHE);
        await Promise.all(responses.map(([request, response]) => cache.put(request, response)));
      })
      .then(() => self.skipWaiting()),
  );
});

async function fetchAsBuilt(file) {
  // 'reload' skips the HTTP cache, so a new version never stores an old file.
  const request = new Request(file, { cache: 'reload' });
  const response = await fetch(request);
  if (!response.ok) throw new Error(file + ': HTTP ' + response.status);
  const expected = DIGESTS[file];
  if (expected !== undefined) {
    let bytes = await response.clone().arrayBuffer();
    if (file === STAMPED) {
      const text = new TextDecoder().decode(bytes);
      const unstamped = text.replace(STAMP, '');
      if (unstamped !== text) bytes = new TextEncoder().encode(unstamped);
    }
    const digest = await crypto.subtle.digest('SHA-256', bytes);
    const hex = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
    if (hex !== expected) throw new Error(file + ' is of another version of the book');
  }
  return [request, response];
}

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(
          names
            .filter((name) => name.startsWith(PREFIX) && name !== CACHE)
            .map((name) => caches.delete(name)),
        ),
      )
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (!(url.origin + url.pathname).startsWith(SCOPE)) return;
  event.respondWith(respond(request, url));
});

async function respond(request, url) {
  const cache = await caches.open(CACHE);
  // The book's bare folder URL shows its contents page.
  const key = url.pathname.endsWith('/') ? new URL('index.html', url).href : request;
  const hit = await cache.match(key, { ignoreSearch: true });
  if (hit) return hit;
  try {
    return await fetch(request);
  } catch (error) {
    if (request.mode === 'navigate') {
      const home = await cache.match(new URL('index.html', SCOPE).href);
      if (home) return home;
    }
    throw error;
  }
}
