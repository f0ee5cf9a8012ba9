//! `tickertape admin database list|create|drop`: the store's databases (InfluxDB's `db`,
//! v2's `bucket`), each a namespace of series (crates/engine/src/databases.rs).
//!
//! On a store opened here, like the other admin commands: a running server has
//! `GET /api/v1/databases`, `POST`/`DELETE /api/v1/admin/databases` and InfluxQL's
//! `CREATE DATABASE`, `SHOW DATABASES`, `DROP DATABASE`.

use crate::store::{DatabaseArg, StoreArgs};
use anyhow::{bail, Result};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Every database, the default one included (marked `(default)`), sorted by name.
    List(ListArgs),
    /// Make a database (nothing changes if it exists): `--db NAME` then reads and writes it.
    Create(CreateArgs),
    /// Delete every series of a database and the database itself; the default database
    /// is emptied but stays. Asks for --yes: deleted points never come back.
    Drop(DropArgs),
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(clap::Args, Debug)]
pub struct CreateArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The database's name: 1 to 64 ASCII letters, digits, `_`, `-` and `.`.
    pub name: String,
}

#[derive(clap::Args, Debug)]
pub struct DropArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The database to drop.
    pub name: String,
    /// Drop it: without this flag nothing is deleted.
    #[arg(long)]
    pub yes: bool,
}

pub async fn run(command: Command) -> Result<()> {
    match command {
        Command::List(args) => list(args).await,
        Command::Create(args) => create(args).await,
        Command::Drop(args) => drop(args).await,
    }
}

async fn list(args: ListArgs) -> Result<()> {
    let engine = args.store.engine().await?;
    let default = engine.default_database().clone();
    for name in engine.list_databases().await? {
        match name == default {
            true => println!("{name} (default)"),
            false => println!("{name}"),
        }
    }
    Ok(())
}

async fn create(args: CreateArgs) -> Result<()> {
    let engine = args.store.engine().await?;
    let created = engine.create_database(&args.name).await?;
    match created {
        true => println!("created database {} in {}", args.name, args.store.store),
        false => println!(
            "database {} already exists in {}; nothing changed",
            args.name, args.store.store
        ),
    }
    Ok(())
}

async fn drop(args: DropArgs) -> Result<()> {
    let engine = args.store.engine().await?;
    // Refused before anything is deleted: a name that is no database, or a typo.
    let database = DatabaseArg {
        db: Some(args.name.clone()),
    }
    .of(&engine)
    .await?;
    let is_default = database.database_name() == engine.default_database();
    if !args.yes {
        bail!(
            "admin database drop deletes every series of database {}{}: run it again with \
             --yes to do so; nothing was deleted",
            args.name,
            match is_default {
                true => " (the default database: it is emptied and stays)",
                false => "",
            }
        );
    }
    let report = engine.drop_database(&args.name).await?;
    let verb = match is_default {
        true => "emptied the default database",
        false => "dropped database",
    };
    println!(
        "{verb} {} in {}: {} series removed",
        args.name, args.store.store, report.series_removed
    );
    Ok(())
}
