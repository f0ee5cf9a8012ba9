//! Fuzzes the per-measurement schema parser (`--config tickertape.toml`) with arbitrary
//! UTF-8.
//!
//! Oracle, beyond "never panics": a config the parser accepts is served back by
//! `GET /api/v1/schema` in the same keys, so writing it back out as TOML and parsing that
//! must give the same schema — which catches a key the serialiser spells differently from
//! the parser (a retention of `1y30d`, an interval of `90s`).
//!
//! Run: `cargo +nightly fuzz run schema_config` from the repository root.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tickertape_core::schema::Schema;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(schema) = Schema::from_toml(text) else {
        return;
    };
    let written = toml::to_string(&schema).expect("an accepted schema serialises");
    let mut table: toml::Table = toml::from_str(&written).expect("written TOML parses");
    // The serialised form also lists the defaults for unlisted measurements.
    table.remove("default");
    let rewritten = toml::to_string(&table).expect("a table serialises");
    let again = Schema::from_toml(&rewritten).expect("a written schema is accepted");
    assert_eq!(again, schema);
});
