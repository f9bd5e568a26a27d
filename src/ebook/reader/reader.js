// Bindery web reader: theme, text size, keyboard paging, the remembered reading position,
// and the service worker that keeps the book for offline reading.
//
// Loaded from <head> without `defer` on purpose: the saved theme and text size are applied
// before the first paint, so the page never flashes or reflows. The rest waits for the DOM.
(function () {
  'use strict';

  var root = document.documentElement;
  var SIZES = 7; // data-size 0..6, matching reader.css
  var DEFAULT_SIZE = 2;
  // Theme and size are the reader's taste, shared by all books; the position is this book's.
  var KEY = 'bindery-reader:';
  var POSITION_KEY = KEY + 'position:' + location.pathname.replace(/[^/]*$/, '');

  function load(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (e) {
      return null; // storage disabled: nothing is remembered, everything still works
    }
  }

  function save(key, value) {
    try {
      window.localStorage.setItem(key, value);
    } catch (e) {
      /* storage full or disabled */
    }
  }

  function savedSize() {
    var size = parseInt(load(KEY + 'size'), 10);
    return size >= 0 && size < SIZES ? size : DEFAULT_SIZE;
  }

  function applyTheme(theme) {
    if (theme === 'light' || theme === 'dark') root.setAttribute('data-theme', theme);
  }

  function effectiveTheme() {
    var chosen = root.getAttribute('data-theme');
    if (chosen) return chosen;
    return window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  }

  applyTheme(load(KEY + 'theme'));
  root.setAttribute('data-size', String(savedSize()));
  root.classList.add('js');

  // Settings -------------------------------------------------------------------------------

  function reflectTheme() {
    var dark = effectiveTheme() === 'dark';
    document.querySelectorAll('[data-action="theme"]').forEach(function (button) {
      button.setAttribute('aria-pressed', dark ? 'true' : 'false');
    });
    if (root.getAttribute('data-theme')) {
      // The browser's bar follows the chosen theme rather than the system's.
      var colour = getComputedStyle(root).getPropertyValue('--bar').trim();
      document.querySelectorAll('meta[name="theme-color"]').forEach(function (meta) {
        if (colour) meta.setAttribute('content', colour);
      });
    }
  }

  function reflectSize() {
    var size = savedSize();
    var smaller = document.querySelector('[data-action="smaller"]');
    var larger = document.querySelector('[data-action="larger"]');
    // aria-disabled rather than disabled: the button keeps focus for keyboard users.
    if (smaller) smaller.setAttribute('aria-disabled', size <= 0 ? 'true' : 'false');
    if (larger) larger.setAttribute('aria-disabled', size >= SIZES - 1 ? 'true' : 'false');
  }

  function changeSize(step) {
    var fraction = scrollFraction();
    var size = Math.max(0, Math.min(SIZES - 1, savedSize() + step));
    root.setAttribute('data-size', String(size));
    save(KEY + 'size', String(size));
    reflectSize();
    // Keep the reader at the same place in the text while it reflows.
    scrollToFraction(fraction);
  }

  function wireControls() {
    document.addEventListener('click', function (event) {
      var button = event.target.closest && event.target.closest('button[data-action]');
      if (!button) return;
      var action = button.getAttribute('data-action');
      if (action === 'theme') {
        var next = effectiveTheme() === 'dark' ? 'light' : 'dark';
        applyTheme(next);
        save(KEY + 'theme', next);
        reflectTheme();
      } else if (action === 'smaller') {
        changeSize(-1);
      } else if (action === 'larger') {
        changeSize(1);
      }
    });
    reflectTheme();
    reflectSize();
  }

  // Keyboard -------------------------------------------------------------------------------

  function wireKeys() {
    var rtl = root.getAttribute('dir') === 'rtl';
    document.addEventListener('keydown', function (event) {
      if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
      var target = event.target;
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
      var rel = null;
      if (event.key === 'ArrowLeft') rel = rtl ? 'next' : 'prev';
      if (event.key === 'ArrowRight') rel = rtl ? 'prev' : 'next';
      if (!rel) return;
      var link = document.querySelector('link[rel="' + rel + '"]');
      if (!link) return;
      event.preventDefault();
      location.href = link.href;
    });
  }

  // Reading position -----------------------------------------------------------------------

  function scrollable() {
    return Math.max(0, document.documentElement.scrollHeight - window.innerHeight);
  }

  function scrollFraction() {
    var max = scrollable();
    return max > 0 ? Math.min(1, Math.max(0, window.scrollY / max)) : 0;
  }

  function scrollToFraction(fraction) {
    window.scrollTo(0, Math.round(fraction * scrollable()));
  }

  function savedPosition() {
    try {
      var position = JSON.parse(load(POSITION_KEY) || 'null');
      if (position && typeof position.chapter === 'string' && typeof position.fraction === 'number') {
        return position;
      }
    } catch (e) {
      /* an unreadable position is no position */
    }
    return null;
  }

  function trackPosition(chapter) {
    var restored = false;
    var position = savedPosition();
    if (!location.hash && position && position.chapter === chapter && position.fraction > 0) {
      if ('scrollRestoration' in history) history.scrollRestoration = 'manual';
      scrollToFraction(position.fraction);
      restored = position.fraction;
    }
    var userScrolled = false;
    var timer = null;
    function record() {
      timer = null;
      save(POSITION_KEY, JSON.stringify({ chapter: chapter, fraction: scrollFraction() }));
    }
    window.addEventListener(
      'scroll',
      function () {
        userScrolled = true;
        if (timer === null) timer = setTimeout(record, 250);
      },
      { passive: true },
    );
    window.addEventListener('pagehide', record);
    document.addEventListener('visibilitychange', function () {
      if (document.visibilityState === 'hidden') record();
    });
    // Late images or fonts can change the page's height: put the reader back once
    // everything has loaded, unless they have moved on by themselves.
    window.addEventListener('load', function () {
      if (restored !== false && !userScrolled) scrollToFraction(restored);
      if (!restored) record();
    });
    if (!restored) record();
  }

  function fillContinue() {
    var link = document.getElementById('continue');
    var position = savedPosition();
    if (!link || !position) return;
    var entry = document.querySelector('.toc a[href="' + CSS.escape(position.chapter) + '"]');
    if (!entry) return;
    link.setAttribute('href', position.chapter);
    // The words come from the page, in the book's language (ebook::reader::pages).
    link.querySelector('.continue-label').textContent = link.getAttribute('data-continue');
    var percent = Math.round(position.fraction * 100);
    link.querySelector('.continue-where').textContent =
      entry.textContent + (percent > 0 ? ' \u00b7 ' + percent + '%' : '');
  }

  // The bar on a chapter ----------------------------------------------------------------------
  // It stays at the top of the screen. Reading on (scrolling down) puts it away; scrolling
  // back up, a tap on the text, or the keyboard reaching it brings it back. It says where the
  // reader is: the chapter of the book, and how far through it.

  function wireBar() {
    var bar = document.querySelector('.bar-chapter');
    if (!bar) return;
    var position = bar.querySelector('.bar-position');
    var percent = bar.querySelector('.bar-percent');
    var line = bar.querySelector('.bar-progress > span');
    var index = parseInt(position.getAttribute('data-index'), 10) || 0;
    var total = parseInt(position.getAttribute('data-total'), 10) || 1;
    var lastY = window.scrollY;
    var ticking = false;
    // Only the reader's own scrolling puts the bar away: not the page putting them back where
    // they stopped reading, which is when they most need to see where they are.
    var reading = false;
    ['wheel', 'touchstart', 'keydown', 'pointerdown'].forEach(function (type) {
      window.addEventListener(type, function () { reading = true; }, { passive: true });
    });

    function setHidden(hidden) {
      // Never hidden while it holds the keyboard's focus, or at the top of the page.
      if (hidden && (bar.contains(document.activeElement) || window.scrollY < bar.offsetHeight)) hidden = false;
      bar.classList.toggle('bar-away', hidden);
    }

    function update() {
      ticking = false;
      var fraction = scrollFraction();
      var through = Math.round(fraction * 100);
      percent.textContent = through > 0 ? ' \u00b7 ' + through + '%' : '';
      line.style.width = (((index + fraction) / total) * 100).toFixed(2) + '%';
      var y = window.scrollY;
      if (Math.abs(y - lastY) > 4) {
        if (reading) setHidden(y > lastY);
        lastY = y;
      }
    }

    window.addEventListener('scroll', function () {
      if (!ticking) {
        ticking = true;
        window.requestAnimationFrame(update);
      }
    }, { passive: true });
    document.addEventListener('click', function (event) {
      // A tap on the text, not on a link or a control, and not the end of a selection.
      if (!event.target.closest || event.target.closest('a, button, .bar, input, select, textarea, summary')) return;
      var selection = window.getSelection && window.getSelection();
      if (selection && !selection.isCollapsed) return;
      setHidden(!bar.classList.contains('bar-away'));
    });
    bar.addEventListener('focusin', function () { setHidden(false); });
    update();
  }

  // Printed pages ----------------------------------------------------------------------------
  // pages.html?page=112 (the "go to page" field's form) goes to where page 112 begins; a page
  // the book does not have is said in the status line, and the field keeps it to correct.

  function goToPage() {
    var status = document.getElementById('goto-status');
    if (!status) return;
    var wanted = new URLSearchParams(location.search).get('page');
    if (wanted === null) return;
    wanted = wanted.trim();
    var input = document.querySelector('.goto-page input[name="page"]');
    var links = document.querySelectorAll('.page-list a');
    for (var i = 0; i < links.length; i++) {
      if (links[i].textContent.trim().toLowerCase() === wanted.toLowerCase()) {
        // Back from the page returns to where the reader asked, not to this list.
        location.replace(links[i].href);
        return;
      }
    }
    if (input) {
      input.value = wanted;
      input.setAttribute('aria-invalid', 'true');
      input.focus();
    }
    var first = links.length ? links[0].textContent : '';
    var last = links.length ? links[links.length - 1].textContent : '';
    // The sentences come from the page, in the book's language, with {page}, {first} and
    // {last} to fill.
    var template = wanted ? status.getAttribute('data-no-such-page') : status.getAttribute('data-type-a-page');
    var values = { page: wanted, first: first, last: last };
    status.textContent = (template || '').replace(/\{(page|first|last)\}/g, function (_, name) {
      return values[name];
    });
  }

  // Offline --------------------------------------------------------------------------------

  function registerServiceWorker() {
    if (!('serviceWorker' in navigator)) return; // insecure origin or an old browser
    // A page shown from a saved version reloads when a new version's worker takes over, so
    // that it is the new version whole, never this page beside the next version's chapters.
    // A first visit has no worker yet, and its first worker changes nothing it shows.
    if (navigator.serviceWorker.controller) {
      var reloading = false;
      navigator.serviceWorker.addEventListener('controllerchange', function () {
        if (reloading) return;
        reloading = true;
        location.reload();
      });
    }
    navigator.serviceWorker
      .register('sw.js')
      .then(function (registration) {
        // A phone that was offline looks for a new version as soon as it is back, and a
        // reader left open looks again when it is brought back into view.
        var look = function () {
          if (navigator.onLine) registration.update().catch(function () {});
        };
        window.addEventListener('online', look);
        document.addEventListener('visibilitychange', function () {
          if (document.visibilityState === 'visible') look();
        });
      })
      .catch(function () {
        /* the book still reads online */
      });
  }

  document.addEventListener('DOMContentLoaded', function () {
    wireControls();
    wireKeys();
    wireBar();
    goToPage();
    var chapter = document.body.getAttribute('data-chapter');
    if (chapter) trackPosition(chapter);
    else fillContinue();
    registerServiceWorker();
  });
})();
