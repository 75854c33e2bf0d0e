//! `crash NAME`, `restart NAME`, `close NAME`: the life of a consumer process.
//!
//! - `crash` is kill -9: position, in-flight records and pending async commits vanish, and no
//!   LeaveGroup is sent, so the group waits for `session.timeout.ms`.
//! - `restart` starts a new incarnation, which rejoins and starts from the committed offset (or
//!   the sink's, or `auto.offset.reset`).
//! - `close` is a graceful shutdown: the strategy's close-time commit, then LeaveGroup.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

macro_rules! lifecycle_command {
    ($ty:ident, $word:literal, $method:ident) => {
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $ty {
            pub consumer: String,
        }

        impl $ty {
            pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
                Ok(Self {
                    consumer: args.word("consumer name")?,
                })
            }

            pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
                lab.$method(&self.consumer)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($word, " {}"), Quoted(&self.consumer))
            }
        }
    };
}

lifecycle_command!(Crash, "crash", crash);
lifecycle_command!(Restart, "restart", restart);
lifecycle_command!(Close, "close", close);
