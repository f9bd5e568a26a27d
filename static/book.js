// A book's page while it converts: progress arrives as Server-Sent Events read from storage.
// When the book is ready or failed, the page reloads to show the report and downloads.
"use strict";

// A ready book with a new version building beside it: the page reloads when that version is
// built or has failed, to show it (readers get the book as it was until then).
(function () {
  const versions = document.querySelector("section.versions[data-building]");
  const book = document.getElementById("book");
  if (!versions || !book) return;
  const url = "/api/v1/books/" + book.dataset.book + "/revisions/" + versions.dataset.building;
  let wait = 1000;
  function look() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : null))
      .then((revision) => {
        if (revision && revision.status !== "processing") {
          window.location.reload();
          return;
        }
        wait = Math.min(wait * 1.5, 10000);
        setTimeout(look, wait);
      })
      .catch(() => setTimeout(look, 10000));
  }
  setTimeout(look, wait);
})();

(function () {
  const book = document.getElementById("book");
  if (!book || book.dataset.status !== "processing" || !window.EventSource) return;
  const events = new EventSource("/api/v1/books/" + book.dataset.book + "/events");

  function stateText(step) {
    if (step.state === "completed") return "done";
    if (step.state === "failed") return "failed";
    if (step.state === "skipped") return "skipped";
    if (step.state === "running") {
      const base = step.total > 1 ? step.done + " of " + step.total : "working";
      return step.message ? base + ": " + step.message : base;
    }
    if (step.state === "queued") return step.total > 1 ? "queued: " + step.done + " of " + step.total + " done" : "queued";
    return "waiting";
  }

  events.addEventListener("progress", (e) => {
    const view = JSON.parse(e.data);
    if (!view.progress) return;
    document.getElementById("overall").value = view.progress.percent;
    document.getElementById("overall-percent").textContent = view.progress.percent + "%";
    for (const step of view.progress.steps) {
      const item = book.querySelector('li[data-step="' + step.step + '"]');
      if (!item) continue;
      item.dataset.state = step.state;
      item.querySelector("progress").value = step.percent;
      item.querySelector(".step-state").textContent = stateText(step);
    }
  });
  events.addEventListener("done", () => { events.close(); window.location.reload(); });
  events.addEventListener("deleted", () => { events.close(); window.location.assign("/books"); });
})();
