//! Invitations by mail, when `SMTP_URL` is set (`lettre`, over rustls). Nothing depends on it: an
//! invitation is made and its link shown whether or not the mail goes, and a mail that fails
//! says why beside the link, which can still be sent by hand.

use std::time::Duration;

use lettre::message::{Mailbox, header::ContentType};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::Role;

/// How long a mail server gets to take a message.
const TIMEOUT: Duration = Duration::from_secs(15);

/// The mail server and the address invitations come from.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

/// An invitation as mailed.
pub struct Invitation<'a> {
    pub to: &'a str,
    pub link: &'a str,
    pub tenant: &'a str,
    pub role: Role,
    /// Who invites, as the mail says it.
    pub by: &'a str,
}

impl Mailer {
    /// The mailer the configuration names, if `SMTP_URL` is set.
    pub fn from_config(config: &crate::config::Config) -> anyhow::Result<Option<Mailer>> {
        let Some(url) = &config.smtp_url else {
            return Ok(None);
        };
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())
            .map_err(|e| anyhow::anyhow!("SMTP_URL: {e}"))?
            .timeout(Some(TIMEOUT))
            .build();
        let from = config
            .smtp_from
            .parse()
            .map_err(|e| anyhow::anyhow!("SMTP_FROM: {e}"))?;
        Ok(Some(Mailer { transport, from }))
    }

    /// Mails an invitation's link. The error says why in words a person can act on.
    pub async fn invite(&self, invitation: &Invitation<'_>) -> Result<(), String> {
        let to: Mailbox = invitation
            .to
            .parse()
            .map_err(|_| format!("{} is not an address a mail can go to", invitation.to))?;
        let body = format!(
            "{by} invites you to {tenant} on Bindery, as {role}.\n\n\
             Open this link to make your account (with a passkey, or a password):\n\n{link}\n\n\
             The link is yours alone: do not forward it. If you did not expect it, ignore this mail.\n",
            by = invitation.by,
            tenant = invitation.tenant,
            role = invitation.role,
            link = invitation.link,
        );
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(format!(
                "Your invitation to {} on Bindery",
                invitation.tenant
            ))
            .header(ContentType::TEXT_PLAIN)
            .body(body)
            .map_err(|e| format!("the mail could not be written ({e})"))?;
        self.transport.send(message).await.map(|_| ()).map_err(|e| {
            tracing::warn!(error = %e, "an invitation could not be mailed");
            "the mail server did not take it; the operator's logs say why".to_owned()
        })
    }
}
