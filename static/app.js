// Shared by every page. Forms marked data-api="METHOD" data-url="…" call the JSON API with the
// session's CSRF token (a cookie alone never changes anything), sending their fields, if they
// have any, as a URL-encoded form (or multipart, for a form with files); then reload or go to
// data-then.
"use strict";

window.bindery = (function () {
  const meta = document.querySelector('meta[name="csrf-token"]');
  const csrf = meta ? meta.content : "";

  // The API's error body is {error:{code,message,field}}; anything else gets a plain sentence.
  async function errorMessage(response) {
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) return body.error.message;
    } catch (_) { /* not JSON */ }
    return "The request failed (HTTP " + response.status + "). Try again.";
  }

  function showError(form, message) {
    const box = form.parentElement.querySelector(".error[role=alert]");
    if (box) {
      box.textContent = message;
      box.hidden = false;
    } else {
      window.alert(message);
    }
  }

  async function api(method, url, body) {
    return fetch(url, {
      method,
      body,
      credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf, Accept: "application/json" },
    });
  }

  document.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.api) return;
    event.preventDefault();
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    try {
      const data = new FormData(form);
      const fields = form.enctype === "multipart/form-data" ? data : new URLSearchParams(data);
      const response = await api(form.dataset.api, form.dataset.url, [...fields.keys()].length ? fields : undefined);
      if (!response.ok) {
        showError(form, await errorMessage(response));
        return;
      }
      const then = form.dataset.then || "reload";
      if (then === "reload") window.location.reload();
      else window.location.assign(then);
    } catch (_) {
      showError(form, "Bindery could not be reached. Check your connection and try again.");
    } finally {
      if (button) button.disabled = false;
    }
  });

  return { csrf, api, errorMessage };
})();
