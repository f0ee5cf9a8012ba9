//! One module per subcommand.

pub mod bench;
pub mod import;
pub mod query;
pub mod serve;
