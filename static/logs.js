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

  function render(event) {
    const line = document.createElement("div");
    line.className = event.role;
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

  const source = new EventSource("/api/v1/admin/logs?lines=300");
  source.addEventListener("open", () => { status.textContent = "Live."; });
  source.addEventListener("error", () => { status.textContent = "Reconnecting…"; });
  source.addEventListener("message", (e) => {
    const event = JSON.parse(e.data);
    if (paused) { held.push(event); held = held.slice(-MAX_LINES); } else append([event]);
  });
})();
