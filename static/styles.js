// The styles page: previews still being made are asked for until they are all ready, then the
// page reloads to show them. Nothing else changes on the page.
"use strict";

(function () {
  const page = document.getElementById("styles");
  if (!page) return;
  const book = page.dataset.book;
  let pending = Array.from(page.querySelectorAll("[data-pending]")).map((s) => s.dataset.style);
  if (!pending.length) return;

  async function ready(style) {
    try {
      const response = await fetch(
        "/api/v1/books/" + encodeURIComponent(book) + "/preview?style=" + encodeURIComponent(style),
        { credentials: "same-origin", headers: { Accept: "application/json" } },
      );
      if (!response.ok && response.status !== 202) return true; // Nothing to wait for.
      const body = await response.json();
      return body.status === "ready";
    } catch (_) {
      return false;
    }
  }

  async function look() {
    const still = [];
    for (const style of pending) {
      if (!(await ready(style))) still.push(style);
    }
    pending = still;
    if (pending.length) window.setTimeout(look, 1500);
    else window.location.reload();
  }

  window.setTimeout(look, 1000);
})();
