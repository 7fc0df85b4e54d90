//! The forge: what opentiger sees of GitHub and asks of it, as plain types (DESIGN §3 step 2,
//! §10). The engine decides on these values; the GitHub client (and the test server) produce them.
//!
//! Only the fields opentiger uses are kept, so a forge that adds fields (or a test server that
//! sends fewer) never breaks parsing (DESIGN §14: slim serde types).
//!
//! Not for: deciding anything on what GitHub says (`engine`), or when to call it (`tick`).

pub mod calls;
pub mod checks;
pub mod ci;
pub mod comments;
mod conversation;
pub mod github;
mod http;

pub use crate::model::{AuthorAssociation, Checks, Issue, IssueEvent, PullRequest};
