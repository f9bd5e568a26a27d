// Passkeys on the sign-in, invitation and account pages: asks the server for the ceremony's
// options, hands them to the browser's WebAuthn API, and sends back its answer. The server's JSON
// carries binary values in base64url, which WebAuthn takes as ArrayBuffers.
"use strict";

(function () {
  if (!document.querySelector("#passkey-signin, #new-account-passkey, #add-passkey")) return;

  const fromB64 = (s) => {
    const b64 = s.replace(/-/g, "+").replace(/_/g, "/");
    const bin = atob(b64 + "===".slice((b64.length + 3) % 4));
    return Uint8Array.from(bin, (c) => c.charCodeAt(0)).buffer;
  };
  const toB64 = (buf) => {
    let bin = "";
    for (const b of new Uint8Array(buf)) bin += String.fromCharCode(b);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };

  function showError(message) {
    const box = document.getElementById("passkey-error");
    box.textContent = message;
    box.hidden = false;
    box.focus?.();
  }

  async function errorOf(response) {
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) return body.error.message;
    } catch (_) { /* not JSON */ }
    return "The request failed (HTTP " + response.status + "). Try again.";
  }

  async function post(url, csrf, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, Accept: "application/json" },
      body: JSON.stringify(body || {}),
    });
  }

  // What the browser made, as the server reads it.
  function credentialJson(credential) {
    const r = credential.response;
    const response = { clientDataJSON: toB64(r.clientDataJSON) };
    if (r.attestationObject) response.attestationObject = toB64(r.attestationObject);
    if (r.authenticatorData) response.authenticatorData = toB64(r.authenticatorData);
    if (r.signature) response.signature = toB64(r.signature);
    if (r.userHandle) response.userHandle = toB64(r.userHandle);
    return {
      id: credential.id,
      rawId: toB64(credential.rawId),
      type: credential.type,
      response,
      extensions: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {},
    };
  }

  const unsupported = "This browser cannot use passkeys here. Use another way to sign in, or a browser that supports passkeys.";
  const cancelled = "No passkey was used (cancelled, or timed out). Try again when ready.";

  // Registration: options from `optionsUrl` with `fields`, the browser makes the passkey, the
  // answer goes to `finishUrl`; then on to where the server says.
  async function register(optionsUrl, finishUrl, csrf, fields) {
    if (!window.PublicKeyCredential) return showError(unsupported);
    const started = await post(optionsUrl, csrf, fields);
    if (!started.ok) return showError(await errorOf(started));
    const options = (await started.json()).publicKey;
    options.challenge = fromB64(options.challenge);
    options.user.id = fromB64(options.user.id);
    for (const c of options.excludeCredentials || []) c.id = fromB64(c.id);
    let credential;
    try {
      credential = await navigator.credentials.create({ publicKey: options });
    } catch (e) {
      return showError(e && e.name === "InvalidStateError" ? "That device already holds a passkey for this account." : cancelled);
    }
    const finished = await post(finishUrl, csrf, { credential: credentialJson(credential) });
    if (!finished.ok) return showError(await errorOf(finished));
    window.location.assign((await finished.json()).next);
  }

  async function signIn(form) {
    if (!window.PublicKeyCredential) return showError(unsupported);
    const csrf = form.dataset.csrf;
    const started = await post("/signin/passkey/options", csrf);
    if (!started.ok) return showError(await errorOf(started));
    const options = (await started.json()).publicKey;
    options.challenge = fromB64(options.challenge);
    for (const c of options.allowCredentials || []) c.id = fromB64(c.id);
    let credential;
    try {
      credential = await navigator.credentials.get({ publicKey: options });
    } catch (_) {
      return showError(cancelled);
    }
    const finished = await post("/signin/passkey", csrf, { credential: credentialJson(credential), next: form.dataset.next || null });
    if (!finished.ok) return showError(await errorOf(finished));
    window.location.assign((await finished.json()).next);
  }

  function guarded(button, work) {
    return async (event) => {
      event.preventDefault();
      button.disabled = true;
      try {
        await work();
      } catch (_) {
        showError("Bindery could not be reached. Check your connection and try again.");
      } finally {
        button.disabled = false;
      }
    };
  }

  const signin = document.getElementById("passkey-signin");
  if (signin) {
    signin.addEventListener("submit", guarded(signin.querySelector("button"), () => signIn(signin)));
  }

  const invited = document.getElementById("new-account-passkey");
  if (invited) {
    const form = document.getElementById("new-account");
    invited.addEventListener("click", guarded(invited, async () => {
      for (const id of ["name", "email", "passkey_name"]) {
        const input = document.getElementById(id);
        if (!input.reportValidity()) return;
      }
      const fields = {
        name: form.elements.name.value,
        email: form.elements.email.value,
        passkey_name: form.elements.passkey_name.value,
      };
      const base = form.getAttribute("action");
      await register(base + "/passkey/options", base + "/passkey", form.dataset.csrf, fields);
    }));
  }

  const add = document.getElementById("add-passkey");
  if (add) {
    add.addEventListener("submit", guarded(add.querySelector("button"), () =>
      register("/account/passkeys/options", "/account/passkeys", add.dataset.csrf, {
        passkey_name: add.elements.passkey_name.value,
      })));
  }
})();
