// Bindery web reader: the service worker of one book, generated with the book.
//
// On install it stores every file of the book, so that after one visit the whole book reads
// offline. Files are served from that cache first and from the network only when missing.
// The cache's name holds this book's scope (its URL) and the build's version, so a rebuilt
// book gets a fresh cache, and two books on one site never delete each other's.
'use strict';

const VERSION = '__VERSION__';
const FILES = __FILES__;

const SCOPE = self.registration.scope;
const PREFIX = 'bindery-reader ' + SCOPE + ' ';
const CACHE = PREFIX + VERSION;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      // 'reload' skips the HTTP cache, so a new version never stores an old file.
      .then((cache) => cache.addAll(FILES.map((file) => new Request(file, { cache: 'reload' }))))
      .then(() => self.skipWaiting()),
  );
});

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
