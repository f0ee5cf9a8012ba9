//! `tickertape bench`: benchmarks as programs (being written).

#[derive(clap::Subcommand, Debug)]
pub enum Command {}

pub async fn run(command: Command) -> anyhow::Result<()> {
    match command {}
}
