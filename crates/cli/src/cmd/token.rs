//! `tickertape admin token create|list|revoke`: the store's API tokens (`serve --auth`).
//!
//! Works while a server runs on the store: the embedded store keeps its tokens in a file
//! of their own, MongoDB in a collection, and the server reads them again within a second.

use crate::store::StoreArgs;
use anyhow::{bail, Context, Result};
use rand::RngCore;
use tickertape_core::auth::{token_secret, Scope, Scopes, TokenHash, TokenRecord};
use tickertape_core::time::format_rfc3339;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Make a token and print it, alone on the last line. Only its hash is stored: the
    /// token is shown this once.
    Create(CreateArgs),
    /// The store's tokens: id, scopes, when made, name (never the token itself).
    List(ListArgs),
    /// Remove a token by the id `list` shows; requests with it are refused within a second.
    Revoke(RevokeArgs),
}

#[derive(clap::Args, Debug)]
pub struct CreateArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// What the token may do: read (queries, dashboard, /metrics), write (line protocol,
    /// remote write) or admin (everything, store operations included). Repeat or separate
    /// by commas for several.
    #[arg(long, required = true, value_delimiter = ',')]
    pub scope: Vec<Scope>,
    /// A name to tell the token by in `list` (e.g. the client that uses it).
    #[arg(long, default_value = "")]
    pub name: String,
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(clap::Args, Debug)]
pub struct RevokeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The token's id, as `admin token list` shows it (12 hex digits).
    pub id: String,
}

pub async fn run(command: Command) -> Result<()> {
    match command {
        Command::Create(args) => create(args).await,
        Command::List(args) => list(args).await,
        Command::Revoke(args) => revoke(args).await,
    }
}

async fn create(args: CreateArgs) -> Result<()> {
    let scopes = Scopes::new(args.scope)?;
    let mut random = [0u8; 24];
    rand::rngs::OsRng.fill_bytes(&mut random);
    let secret = token_secret(random);
    let record = TokenRecord {
        name: args.name,
        scopes,
        hash: TokenHash::of(&secret),
        created: now_ns(),
    };
    let store = args.store.token_store().await?;
    store
        .add_token(record.clone())
        .await
        .with_context(|| format!("cannot store the token in {}", args.store.store))?;
    println!(
        "created token {} (scopes {}{}) in {}; it is shown only this once:",
        record.id(),
        record.scopes,
        if record.name.is_empty() {
            String::new()
        } else {
            format!(", name {:?}", record.name)
        },
        args.store.store
    );
    println!("{secret}");
    Ok(())
}

async fn list(args: ListArgs) -> Result<()> {
    let tokens = args.store.token_store().await?.tokens().await?;
    if tokens.is_empty() {
        println!(
            "no tokens in {} (make one with `tickertape admin token create --scope …`)",
            args.store.store
        );
        return Ok(());
    }
    println!("{:<12}  {:<16}  {:<20}  name", "id", "scopes", "created");
    for t in &tokens {
        println!(
            "{:<12}  {:<16}  {:<20}  {}",
            t.id(),
            t.scopes.to_string(),
            format_rfc3339(t.created),
            t.name
        );
    }
    Ok(())
}

async fn revoke(args: RevokeArgs) -> Result<()> {
    let removed = args
        .store
        .token_store()
        .await?
        .revoke_token(args.id.trim())
        .await?;
    if removed == 0 {
        bail!(
            "no token with id {} in {} (`tickertape admin token list` shows the ids)",
            args.id,
            args.store.store
        );
    }
    println!("revoked token {}", args.id);
    Ok(())
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}
