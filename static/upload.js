// The upload form, of a new book or of a book's next version: drag and drop, a real progress
// bar (XMLHttpRequest reports upload progress; fetch does not), and the API's error shown next
// to the field at fault. It sends to the form's action and goes, once the server has the
// upload, to its `data-then` (the book's page) or else to the new book's page.
"use strict";

(function () {
  const form = document.getElementById("upload");
  if (!form) return;
  const drop = document.getElementById("drop");
  const input = document.getElementById("manuscript");
  const hint = document.getElementById("manuscript-hint");
  const row = document.getElementById("upload-progress");
  const bar = document.getElementById("upload-bar");
  const percent = document.getElementById("upload-percent");
  const error = document.getElementById("upload-error");
  const submit = form.querySelector("button[type=submit]");

  function chosen() {
    if (input.files.length) hint.textContent = "Chosen: " + input.files[0].name;
  }
  input.addEventListener("change", chosen);
  ["dragenter", "dragover"].forEach((type) =>
    drop.addEventListener(type, (e) => { e.preventDefault(); drop.classList.add("over"); }));
  ["dragleave", "drop"].forEach((type) =>
    drop.addEventListener(type, () => drop.classList.remove("over")));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    if (e.dataTransfer && e.dataTransfer.files.length) {
      input.files = e.dataTransfer.files;
      chosen();
    }
  });

  // The bar is for a sending in progress: once the server has answered (or the connection
  // broke), it goes, so that "Uploading 100%" never stands beside a refusal.
  function done() {
    row.hidden = true;
    bar.value = 0;
    percent.textContent = "0%";
    submit.disabled = false;
  }

  function fail(message, field) {
    error.textContent = message;
    error.hidden = false;
    form.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
    const at = field && form.elements.namedItem(field);
    if (at && at.focus) { at.setAttribute("aria-invalid", "true"); at.focus(); } else error.focus();
  }

  // One key per submission: a retried or double-clicked upload creates one book (or version).
  function idempotencyKey() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    error.hidden = true;
    if (!input.files.length) { fail("Choose a manuscript to upload.", "manuscript"); return; }
    // An empty file is no manuscript: said here, before anything is sent.
    if (input.files[0].size === 0) {
      fail("“" + input.files[0].name + "” is empty (0 bytes). Choose the file again; if it is still empty, save it again from your editor.", "manuscript");
      return;
    }
    const cover = document.getElementById("cover");
    if (cover.files.length && cover.files[0].size === 0) {
      fail("The cover “" + cover.files[0].name + "” is empty (0 bytes). Choose another image, or none.", "cover");
      return;
    }
    const data = new FormData();
    // Files last: the server reads fields as they stream in, and small ones first is kinder.
    for (const el of form.elements) {
      if (!el.name || el.type === "file" || el.type === "submit") continue;
      // An unticked box or an unchosen option says nothing: the manuscript's value, or the
      // default, holds.
      if ((el.type === "checkbox" || el.type === "radio") && !el.checked) continue;
      const value = el.value.trim();
      if (value) data.append(el.name, value);
    }
    if (cover.files.length) data.append("cover", cover.files[0]);
    data.append("manuscript", input.files[0]);

    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.getAttribute("action"));
    xhr.setRequestHeader("X-CSRF-Token", window.bindery.csrf);
    xhr.setRequestHeader("Idempotency-Key", idempotencyKey());
    xhr.setRequestHeader("Accept", "application/json");
    xhr.responseType = "json";
    xhr.upload.addEventListener("progress", (e) => {
      if (!e.lengthComputable) return;
      const p = Math.floor((e.loaded / e.total) * 100);
      bar.value = p;
      percent.textContent = p + "%";
    });
    xhr.addEventListener("load", () => {
      const body = xhr.response || {};
      if (xhr.status === 200 || xhr.status === 202) {
        window.location.assign(form.dataset.then || "/books/" + body.id);
        return;
      }
      done();
      const e = body.error || {};
      fail(e.message || "The upload failed (HTTP " + xhr.status + "). Try again.", e.field);
    });
    xhr.addEventListener("error", () => {
      done();
      fail("The upload was interrupted. Check your connection and try again.");
    });
    submit.disabled = true;
    row.hidden = false;
    xhr.send(data);
  });
})();
