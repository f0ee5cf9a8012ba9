//! One module per subcommand.

pub mod admin;
pub mod database;
pub mod export;
pub mod import;
pub mod plot;
pub mod query;
pub mod serve;
pub mod token;
