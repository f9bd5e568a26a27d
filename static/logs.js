// The admin's live logs: Server-Sent Events from the admin API, one log line each. Keeps the
// newest 2000 lines on the page; follows new lines unless the reader scrolled up or paused.
"use strict";

(function () {
  const box = document.getElementById("logs");
  if (!box || !window.EventSource) return;
  const status = document.getElementById("logs-status");
  const pause = document.getElementById("logs-pause");
  const follow = document.getElementById("logs-follow");
  const MAX_LINES = 2000;
  let paused = false;
  let held = [];

  // JSON lines (LOG_FORMAT=json) read as text lines do: time, level, role, message, fields.
  const SHOWN = new Set(["timestamp", "level", "role", "pid", "message", "target"]);
  function text(event) {
    const f = event.fields;
    if (!f) return event.line;
    const rest = Object.entries(f)
      .filter(([key]) => !SHOWN.has(key))
      .map(([key, value]) => key + "=" + (typeof value === "string" ? value : JSON.stringify(value)));
    return [f.timestamp, f.level, event.role + (f.pid ? "[" + f.pid + "]" : ""), f.message]
      .concat(rest)
      .filter((part) => part !== undefined && part !== "")
      .join(" ");
  }

  // A text line's level is its second word (after the time); a JSON line says it.
  const LEVELS = new Set(["ERROR", "WARN", "INFO", "DEBUG", "TRACE"]);
  function level(event) {
    if (event.fields && event.fields.level) return String(event.fields.level).toUpperCase();
    const word = (event.line || "").split(" ").find((w) => LEVELS.has(w));
    return word || "";
  }

  function render(event) {
    const line = document.createElement("div");
    line.className = event.role;
    line.dataset.level = level(event);
    line.textContent = text(event);
    return line;
  }

  function append(events) {
    const fragment = document.createDocumentFragment();
    for (const e of events) fragment.appendChild(render(e));
    box.appendChild(fragment);
    while (box.childElementCount > MAX_LINES) box.firstElementChild.remove();
    if (follow.checked) box.scrollTop = box.scrollHeight;
  }

  pause.addEventListener("click", () => {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume" : "Pause";
    if (!paused) { append(held); held = []; }
  });

  // The filters are the API's own (level or worse, text in the message or fields, role): a
  // new filter opens a new stream, whose backlog is already filtered.
  const filter = document.getElementById("logs-filter");
  let source = null;
  function connect() {
    if (source) source.close();
    box.replaceChildren();
    held = [];
    const params = new URLSearchParams({ lines: "300" });
    for (const name of ["level", "grep", "role"]) {
      const value = filter.elements.namedItem(name).value.trim();
      if (value) params.set(name, value);
    }
    status.textContent = "Connecting…";
    source = new EventSource("/api/v1/admin/logs?" + params);
    source.addEventListener("open", () => { status.textContent = "Live."; });
    source.addEventListener("error", () => { status.textContent = "Reconnecting…"; });
    source.addEventListener("message", (e) => {
      const event = JSON.parse(e.data);
      if (paused) { held.push(event); held = held.slice(-MAX_LINES); } else append([event]);
    });
  }
  filter.addEventListener("submit", (e) => { e.preventDefault(); connect(); });
  filter.addEventListener("change", (e) => { if (e.target.tagName === "SELECT") connect(); });
  connect();
})();
