//! Single sign-on with OpenID Connect (`openidconnect`): the authorization code flow with PKCE
//! (S256), `state` and `nonce`. The provider's metadata and keys are discovered on first use and
//! kept for the life of the process (a failed discovery is tried again at the next sign-in).
//!
//! What a sign-in remembers between the redirect and the callback (state, nonce, PKCE verifier)
//! waits in `ceremonies`, named by a cookie, so the callback is checked against the browser
//! that began it: a callback whose `state` is not that browser's is refused before the code is
//! exchanged. The ID token's signature, issuer, audience, expiry and nonce are checked by the
//! library; the provider's own `iss` on the callback (RFC 9207), and that the address is
//! verified, here.
//!
//! An identity is `ISSUER SUBJECT`: a provider's subject is unique only within its issuer.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreIdTokenClaims, CoreProviderMetadata,
};
use openidconnect::{
    AsyncHttpClient, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EmptyAdditionalClaims,
    HttpClientError, HttpRequest, HttpResponse, IssuerUrl, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse, UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;
use url::Url;

use crate::config::Secret;

/// Largest answer taken from the provider (discovery, keys, tokens, user info: a few KiB).
const MAX_BODY: usize = 1 << 20;

/// The provider as configured (`OIDC_ISSUER_URL`, `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET`), its
/// metadata once discovered, and the HTTP client that talks to it.
pub struct Provider {
    issuer: Url,
    client_id: String,
    client_secret: Secret<String>,
    metadata: OnceCell<CoreProviderMetadata>,
    http: Http,
}

/// What waits between the redirect and the callback.
#[derive(Debug, Serialize, Deserialize)]
pub struct Pending {
    state: String,
    nonce: String,
    verifier: String,
    /// The redirect URI the request named, which the exchange must name again.
    redirect: String,
}

/// Who the provider says signed in.
#[derive(Debug, Clone)]
pub struct Identity {
    /// `ISSUER SUBJECT`.
    pub key: String,
    /// The address, verified by the provider (an unverified one is refused).
    pub email: String,
    pub name: Option<String>,
}

/// Why a single sign-on failed, as the person is told (the log has the detail).
#[derive(Debug, thiserror::Error)]
pub enum SignOnError {
    #[error(
        "The identity provider could not be reached, or answered something Bindery cannot use. Try again later, or sign in another way."
    )]
    Provider(String),
    #[error(
        "That sign-in did not start here, or took too long. Start again from the sign-in page."
    )]
    State,
    #[error("The identity provider did not sign you in ({0}). Try again, or sign in another way.")]
    Refused(String),
    #[error(
        "The identity provider's answer could not be verified ({0}), so it was not trusted. Start again from the sign-in page."
    )]
    Token(String),
    #[error(
        "The identity provider gave no email address for you, which Bindery needs to know who you are. Ask its administrator, or sign in another way."
    )]
    NoEmail,
    #[error(
        "The identity provider has not verified your address {0}, so Bindery cannot trust it to name your account. Verify it there, then sign in again."
    )]
    Unverified(String),
}

impl Provider {
    /// The provider the configuration names, if single sign-on is set up (the configuration
    /// has checked that its three variables come together).
    pub fn from_config(config: &crate::config::Config) -> anyhow::Result<Option<Provider>> {
        let (Some(issuer), Some(client_id), Some(client_secret)) = (
            config.oidc_issuer_url.clone(),
            config.oidc_client_id.clone(),
            config.oidc_client_secret.clone(),
        ) else {
            return Ok(None);
        };
        Ok(Some(Provider {
            issuer,
            client_id,
            client_secret,
            metadata: OnceCell::new(),
            http: Http::new()?,
        }))
    }

    /// The issuer as `OIDC_ISSUER_URL` names it; the `Url` type would add a trailing slash to a
    /// bare host, which openidconnect then compares against the discovered issuer.
    fn issuer(&self) -> Result<IssuerUrl, SignOnError> {
        let text = self.issuer.as_str();
        let text = if self.issuer.path() == "/" {
            text.trim_end_matches('/')
        } else {
            text
        };
        IssuerUrl::new(text.to_owned()).map_err(|e| SignOnError::Provider(e.to_string()))
    }

    async fn metadata(&self) -> Result<&CoreProviderMetadata, SignOnError> {
        self.metadata
            .get_or_try_init(|| async {
                let issuer = self.issuer()?;
                CoreProviderMetadata::discover_async(issuer.clone(), &self.http)
                    .await
                    .map_err(|e| {
                        SignOnError::Provider(format!(
                            "discovering {}: {}",
                            issuer.as_str(),
                            chain(&e)
                        ))
                    })
            })
            .await
    }

    async fn client(
        &self,
        redirect: &str,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        SignOnError,
    > {
        let metadata = self.metadata().await?.clone();
        let redirect = RedirectUrl::new(redirect.to_owned())
            .map_err(|e| SignOnError::Provider(e.to_string()))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.client_id.clone()),
            Some(ClientSecret::new(self.client_secret.expose().clone())),
        )
        .set_redirect_uri(redirect))
    }

    /// Where to send the browser, and what to keep until it comes back to `redirect`.
    pub async fn begin(&self, redirect: &str) -> Result<(Url, Pending), SignOnError> {
        let client = self.client(redirect).await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .add_scope(Scope::new("profile".into()))
            .set_pkce_challenge(challenge)
            .url();
        let pending = Pending {
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
            redirect: redirect.to_owned(),
        };
        Ok((url, pending))
    }

    /// Checks the callback's parameters against what began it, exchanges the code, and verifies
    /// the identity. Nothing is sent to the provider before `state` (and `iss`) check out.
    pub async fn finish(
        &self,
        pending: Pending,
        parameters: &[(String, String)],
    ) -> Result<Identity, SignOnError> {
        let param = |name: &str| {
            parameters
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let state_ok = param("state")
            .is_some_and(|given| crate::tokens::hash(given) == crate::tokens::hash(&pending.state));
        if !state_ok {
            return Err(SignOnError::State);
        }
        let issuer = self.issuer()?;
        if let Some(iss) = param("iss")
            && iss != issuer.as_str()
        {
            return Err(SignOnError::Token(format!("the answer came from {iss}")));
        }
        if let Some(error) = param("error") {
            let description = param("error_description").unwrap_or(error);
            return Err(SignOnError::Refused(description.to_owned()));
        }
        let code = param("code").ok_or_else(|| SignOnError::Refused("no code".into()))?;
        let client = self.client(&pending.redirect).await?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| SignOnError::Provider(chain(&e)))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| SignOnError::Refused(chain(&e)))?;
        let id_token = token
            .id_token()
            .ok_or_else(|| SignOnError::Token("no ID token".into()))?;
        let verifier = client.id_token_verifier();
        let claims: &CoreIdTokenClaims = id_token
            .claims(&verifier, &Nonce::new(pending.nonce))
            .map_err(|e| SignOnError::Token(e.to_string()))?;
        let key = format!("{} {}", issuer.as_str(), claims.subject().as_str());
        let name = claims
            .name()
            .and_then(|n| n.get(None))
            .map(|n| n.to_string());
        let (email, verified) = match claims.email() {
            Some(email) => (email.to_string(), claims.email_verified()),
            // Some providers keep the address for the user info endpoint.
            None => {
                let request = client
                    .user_info(token.access_token().clone(), Some(claims.subject().clone()))
                    .map_err(|_| SignOnError::NoEmail)?;
                let info: UserInfoClaims<EmptyAdditionalClaims, CoreGenderClaim> = request
                    .request_async(&self.http)
                    .await
                    .map_err(|e| SignOnError::Provider(chain(&e)))?;
                let email = info.email().ok_or(SignOnError::NoEmail)?.to_string();
                (email, info.email_verified())
            }
        };
        // An address the provider has not verified could be anyone's: it names no account.
        if verified != Some(true) {
            return Err(SignOnError::Unverified(email));
        }
        Ok(Identity { key, email, name })
    }
}

/// An error and its causes, for the log.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// openidconnect's HTTP client, over Bindery's reqwest (openidconnect's own brings another
/// reqwest). Never follows a redirect (a token endpoint's redirect must not take the client
/// secret along) and gives up after 10 s.
struct Http(reqwest::Client);

impl Http {
    fn new() -> anyhow::Result<Http> {
        Ok(Http(
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(Duration::from_secs(5))
                .timeout(Duration::from_secs(10))
                .build()?,
        ))
    }
}

impl<'c> AsyncHttpClient<'c> for Http {
    type Error = HttpClientError<reqwest::Error>;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, Self::Error>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request).map_err(Box::new)?;
            let mut response = self.0.execute(request).await.map_err(Box::new)?;
            let mut answer = openidconnect::http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(Box::new)? {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(HttpClientError::Other(format!(
                        "the answer from {} is larger than {MAX_BODY} bytes",
                        response.url()
                    )));
                }
                body.extend_from_slice(&chunk);
            }
            answer.body(body).map_err(HttpClientError::Http)
        })
    }
}
