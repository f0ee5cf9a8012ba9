//! One module per subcommand.

pub mod admin;
pub mod bench;
pub mod import;
pub mod query;
pub mod serve;
