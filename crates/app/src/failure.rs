//! A failure as the person who hit it sees it: an exit code (DESIGN §11: 1 tick error, 2 usage
//! or configuration error, 3 state conflict) and one message naming what went wrong and the fix.
//! The error type of the application layer (`tick`, `demo`, `cli`). Edges keep their own
//! `thiserror` enums and convert into it where a command gives up.
//! Not for: a run that failed (its failure code and category, `model::vocab`, classified by
//! `engine::classify`), or printing and exiting (`cli`, `main.rs`).

/// A failure with its exit code and a message for the person who hit it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    /// stdout was closed by its reader (`| head -1`): nothing more to say, and nothing went
    /// wrong, so exit 0 with no message.
    pub fn closed_stdout() -> Failure {
        Failure {
            code: 0,
            message: String::new(),
        }
    }
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            message: message.into(),
        }
    }
    pub fn tick(message: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
}

impl From<crate::config::ConfigError> for Failure {
    fn from(e: crate::config::ConfigError) -> Self {
        Failure::usage(e.to_string())
    }
}

impl From<crate::store::StoreError> for Failure {
    fn from(e: crate::store::StoreError) -> Self {
        Failure {
            code: if e.is_user_error() { 2 } else { 1 },
            message: e.to_string(),
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::tick(e.to_string())
    }
}
