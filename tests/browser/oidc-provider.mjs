// A loopback OpenID provider for Bindery's single sign-on tests (tests/it/single_sign_on.rs):
// panva's oidc-provider (a certified implementation), pinned in package.json.
//
//   OIDC_CLIENT_ID=bindery OIDC_CLIENT_SECRET=s3cret node oidc-provider.mjs 0
//
// Prints `ISSUER http://127.0.0.1:PORT` (no trailing slash; discovery at
// ISSUER/.well-known/openid-configuration) once it listens, then reads the client's redirect
// URI from its first line on stdin (or OIDC_REDIRECT_URI), and prints `READY URI` once it
// answers. Its own notices go to stderr. Stops on SIGTERM or SIGINT (exit 0).
//
// One confidential client (client_secret_basic, PKCE S256 required, scopes openid email
// profile). Accounts (log in with the id or the address; every password is "password"):
//   ann  ann@example.test  email_verified: true
//   bob  bob@example.test  email_verified: false
//   cat  cat@example.test  email_verified: true
//   dan  (no address at all)
//
// Its sign-in and consent pages are its own, plain forms with no external resources, so a test
// signs in over plain HTTP (oidc-provider's devInteractions take any password and load fonts
// from the internet):
//   GET  /interaction/UID           the login or consent form
//   POST /interaction/UID           prompt=login&login=ann&password=password, or prompt=consent
//   GET  /interaction/UID/abort     ends with error=access_denied at the relying party
//
// Environment: OIDC_CLIENT_ID and OIDC_CLIENT_SECRET (required), OIDC_REDIRECT_URI, OIDC_HOST
// (default 127.0.0.1), OIDC_CLAIMS_IN_USERINFO_ONLY=1 (the address only at the user info
// endpoint, as the letter of the spec has it), OIDC_SKIP_CONSENT=1 (a grant on first login).

import http from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';

// oidc-provider prints NOTICEs with console.info, i.e. on stdout, lazily (the
// first time a default helper runs, during the first requests). Keep stdout for
// the ISSUER line alone, and never die of EPIPE if the parent stopped reading.
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);
process.stdout.on('error', () => {});

const PASSWORD = 'password';
const ACCOUNTS = {
  ann: { email: 'ann@example.test', email_verified: true, name: 'Ann Example', given_name: 'Ann', family_name: 'Example' },
  bob: { email: 'bob@example.test', email_verified: false, name: 'Bob Example', given_name: 'Bob', family_name: 'Example' },
  cat: { email: 'cat@example.test', email_verified: true, name: 'Cat Example', given_name: 'Cat', family_name: 'Example' },
  dan: { name: 'Dan Example', given_name: 'Dan', family_name: 'Example' },
};

function accountIdFor(login) {
  const l = String(login ?? '').trim().toLowerCase();
  if (Object.hasOwn(ACCOUNTS, l)) return l;
  return Object.keys(ACCOUNTS).find((id) => ACCOUNTS[id].email === l);
}

/** The first line a stream gives, without its end of line. */
function firstLine(stream) {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      text += chunk;
      const end = text.indexOf('\n');
      if (end >= 0) {
        stream.pause();
        resolve(text.slice(0, end).trim());
      }
    });
    stream.on('end', () => reject(new Error('no redirect URI on stdin')));
  });
}

function need(name) {
  const v = process.env[name];
  if (!v) {
    process.stderr.write(`oidc-provider.mjs: ${name} is not set\n`);
    process.exit(2);
  }
  return v;
}

const clientId = need('OIDC_CLIENT_ID');
const clientSecret = need('OIDC_CLIENT_SECRET');
const host = process.env.OIDC_HOST || '127.0.0.1';
const portArg = (process.argv[2] ?? '0').trim();
const port = Number(portArg);
if (!/^\d+$/.test(portArg) || port > 65535) {
  process.stderr.write(`usage: node oidc-provider.mjs PORT   (0 picks a free port); got ${JSON.stringify(portArg)}\n`);
  process.exit(2);
}

// Listen first: with port 0 the issuer URL is only known afterwards, and the
// issuer is a constructor argument of Provider. Requests are only routed once
// the provider exists, which READY says.
const server = http.createServer();
server.keepAliveTimeout = 1000;
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, host, resolve);
});
const hostForUrl = host.includes(':') ? `[${host}]` : host;
const issuer = `http://${hostForUrl}:${server.address().port}`;

// A fresh RS256 signing key per run (instead of oidc-provider's built-in
// development key, which it warns about).
process.stdout.write(`ISSUER ${issuer}\n`);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }),
  kid: `test-${randomBytes(4).toString('hex')}`,
  alg: 'RS256',
  use: 'sig',
};

const skipConsent = process.env.OIDC_SKIP_CONSENT === '1';

// The client's redirect URI: OIDC_REDIRECT_URI, or else the first line on stdin, so that a
// test can start this first, learn the issuer, start the relying party with it, and then
// name the relying party's own address.
const redirectUri = process.env.OIDC_REDIRECT_URI || await firstLine(process.stdin);

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    // 'web' is the default application_type. oidc-provider only insists on
    // https (and forbids localhost) for web clients that use the *implicit*
    // grant; a code-flow web client may register http://127.0.0.1:... or
    // http://localhost:... redirect URIs as they are. Nothing else is needed
    // for plain http on loopback (no proxy setting, no secure cookies: the
    // cookies are only `secure` when the request is https).
    application_type: 'web',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  // Confidential clients are not required to use PKCE by default; require it
  // for every client (oidc-provider 9 supports only the S256 method).
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name'],
  },
  // Fixed lifetimes (seconds); the defaults are functions that print a NOTICE.
  ttl: {
    AuthorizationCode: 60,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
    AccessToken: 600,
    IdToken: 600,
  },
  conformIdTokenClaims: process.env.OIDC_CLAIMS_IN_USERINFO_ONLY === '1',
  features: {
    devInteractions: { enabled: false },
  },
  interactions: {
    url: (_ctx, interaction) => `/interaction/${interaction.uid}`,
  },
  ...(skipConsent ? {
    // Grant what is asked for on the first login: no consent prompt.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
  } : {}),
  async findAccount(_ctx, sub) {
    if (!Object.hasOwn(ACCOUNTS, sub)) return undefined;
    return {
      accountId: sub,
      async claims() {
        return { sub, ...ACCOUNTS[sub] };
      },
    };
  },
});

// ---- interaction pages -----------------------------------------------------

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({
  '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
}[c]));

function page(res, status, title, body) {
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} - test OpenID provider</title></head>
<body><main><h1>${esc(title)}</h1>
${body}
</main></body></html>
`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(html),
  });
  res.end(html);
}

function loginForm(uid, { login = '', error } = {}) {
  return `${error ? `<p role="alert" id="error">${esc(error)}</p>\n` : ''}<form method="post" action="/interaction/${esc(uid)}" autocomplete="off">
<input type="hidden" name="prompt" value="login">
<p><label for="login">Account or email</label> <input id="login" name="login" type="text" required value="${esc(login)}" autofocus></p>
<p><label for="password">Password</label> <input id="password" name="password" type="password" required></p>
<p><button type="submit">Sign in</button></p>
</form>
<p><a href="/interaction/${esc(uid)}/abort">Cancel</a></p>`;
}

function consentForm(uid, clientId, details) {
  const scopes = (details.missingOIDCScope || []).filter((s) => s !== 'openid');
  return `<p>The application <strong id="client">${esc(clientId)}</strong> asks for: <span id="scopes">${esc(scopes.join(' ') || '(nothing new)')}</span></p>
<form method="post" action="/interaction/${esc(uid)}">
<input type="hidden" name="prompt" value="consent">
<p><button type="submit" autofocus>Continue</button></p>
</form>
<p><a href="/interaction/${esc(uid)}/abort">Cancel</a></p>`;
}

async function readForm(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > 16 * 1024) throw new Error('form too large');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

async function interaction(req, res, uid, action) {
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (e) {
    // No (or an expired) _interaction cookie for this path.
    page(res, 400, 'Sign-in expired', `<p>${esc(e.error_description || e.message)}</p>`);
    return;
  }
  if (details.uid !== uid) {
    page(res, 400, 'Sign-in expired', '<p>interaction mismatch</p>');
    return;
  }
  const { prompt, params, session } = details;

  if (action === 'abort' && req.method === 'GET') {
    await provider.interactionFinished(req, res, {
      error: 'access_denied',
      error_description: 'End-User aborted interaction',
    }, { mergeWithLastSubmission: false });
    return;
  }
  if (action) {
    page(res, 404, 'Not found', '');
    return;
  }

  if (req.method === 'GET') {
    if (prompt.name === 'login') {
      page(res, 200, 'Sign in', loginForm(uid, { login: params.login_hint || '' }));
    } else if (prompt.name === 'consent') {
      page(res, 200, 'Authorize', consentForm(uid, params.client_id, prompt.details));
    } else {
      page(res, 501, 'Not implemented', `<p>prompt ${esc(prompt.name)}</p>`);
    }
    return;
  }
  if (req.method !== 'POST') {
    page(res, 405, 'Method not allowed', '');
    return;
  }

  const form = await readForm(req);
  if (form.get('prompt') !== prompt.name) {
    page(res, 400, 'Unexpected form', `<p>expected prompt ${esc(prompt.name)}</p>`);
    return;
  }
  if (prompt.name === 'login') {
    const accountId = accountIdFor(form.get('login'));
    if (!accountId || form.get('password') !== PASSWORD) {
      page(res, 401, 'Sign in', loginForm(uid, { login: form.get('login') || '', error: 'Invalid account or password.' }));
      return;
    }
    await provider.interactionFinished(req, res, {
      login: { accountId },
    }, { mergeWithLastSubmission: false });
    return;
  }
  if (prompt.name === 'consent') {
    const { details: missing } = prompt;
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    if (missing.missingResourceScopes) {
      for (const [indicator, scope] of Object.entries(missing.missingResourceScopes)) {
        grant.addResourceScope(indicator, scope.join(' '));
      }
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return;
  }
  page(res, 501, 'Not implemented', `<p>prompt ${esc(prompt.name)}</p>`);
}

const providerCallback = provider.callback();
process.stdout.write(`READY ${redirectUri}\n`);
server.on('request', (req, res) => {
  const m = /^\/interaction\/([A-Za-z0-9_-]+)(?:\/(abort))?\/?(?:\?.*)?$/.exec(req.url);
  if (!m) {
    providerCallback(req, res);
    return;
  }
  interaction(req, res, m[1], m[2]).catch((e) => {
    process.stderr.write(`oidc-provider.mjs: interaction error: ${e.stack || e}\n`);
    if (!res.headersSent) page(res, 500, 'Error', `<p>${esc(e.message)}</p>`);
    else res.destroy();
  });
});


let stopping = false;
function stop(signal) {
  if (stopping) return;
  stopping = true;
  process.stderr.write(`oidc-provider.mjs: ${signal}, stopping\n`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
