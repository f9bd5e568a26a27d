//! What a person may do: the roles an account or an invitation carries (the module above says
//! what each means).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Owner,
    Author,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Admin, Role::Owner, Role::Author];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Owner => "owner",
            Role::Author => "author",
        }
    }

    /// What a person reads about it, on the pages.
    pub fn describe(self) -> &'static str {
        match self {
            Role::Admin => "Admin: the whole installation",
            Role::Owner => "Owner: the imprint's books, people and invitations",
            Role::Author => "Author: the imprint's books",
        }
    }

    /// Whether this role manages its tenant's people and invitations.
    pub fn manages_people(self) -> bool {
        matches!(self, Role::Admin | Role::Owner)
    }

    /// The roles someone with this role may invite: an admin any, an owner owners and authors,
    /// an author none.
    pub fn may_invite(self, role: Role) -> bool {
        match self {
            Role::Admin => true,
            Role::Owner => role != Role::Admin,
            Role::Author => false,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Role, String> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a role: use admin, owner or author"))
    }
}

impl TryFrom<String> for Role {
    type Error = String;

    fn try_from(s: String) -> Result<Role, String> {
        s.parse()
    }
}
