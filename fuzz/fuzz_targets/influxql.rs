//! The InfluxQL parser on arbitrary text: it must return an error, never panic, and what
//! it parses must print to text that parses back to the same statements.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(query) = tickertape_influxql::parse(text) {
        let printed = query.to_string();
        assert_eq!(tickertape_influxql::parse(&printed), Ok(query), "{printed}");
    }
});
