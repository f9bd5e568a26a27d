// The admin's Tokens page: creates a token through the admin API and shows it, once.
"use strict";

(function () {
  const form = document.getElementById("new-token");
  if (!form || !window.bindery) return;
  const result = document.getElementById("new-token-result");
  const value = document.getElementById("new-token-value");
  const error = form.parentElement.querySelector(".error[role=alert]");

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    error.hidden = true;
    try {
      const body = JSON.stringify({ name: form.elements.name.value.trim(), admin: form.elements.admin.checked });
      const response = await fetch("/api/v1/admin/tokens", {
        method: "POST",
        body,
        credentials: "same-origin",
        headers: { "X-CSRF-Token": window.bindery.csrf, "Content-Type": "application/json", Accept: "application/json" },
      });
      if (!response.ok) {
        error.textContent = await window.bindery.errorMessage(response);
        error.hidden = false;
        return;
      }
      const created = await response.json();
      document.getElementById("new-token-name").textContent = created.name;
      value.value = created.token;
      result.hidden = false;
      form.hidden = true;
      value.select();
    } catch (_) {
      error.textContent = "Bindery could not be reached. Check your connection and try again.";
      error.hidden = false;
    } finally {
      button.disabled = false;
    }
  });

  document.getElementById("new-token-copy").addEventListener("click", async () => {
    value.select();
    try {
      await navigator.clipboard.writeText(value.value);
    } catch (_) {
      document.execCommand("copy");
    }
  });
})();
