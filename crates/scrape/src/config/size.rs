//! `body_size_limit`'s sizes as Prometheus reads them (base-2 units: `512KB` and
//! `512KiB` are both 512 × 1024 bytes; `B` alone for bytes; `0` for no limit).

pub fn parse(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?} is not a size (a number and B, KB, MB, GB, TB, KiB, MiB…)");
    if text == "0" {
        return Ok(0);
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let number: u64 = text[..digits].parse().map_err(|_| bad())?;
    let shift = match &text[digits..] {
        "B" => 0,
        "KB" | "KiB" => 10,
        "MB" | "MiB" => 20,
        "GB" | "GiB" => 30,
        "TB" | "TiB" => 40,
        "PB" | "PiB" => 50,
        _ => return Err(bad()),
    };
    number.checked_mul(1 << shift).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    #[test]
    fn base_two_units() {
        assert_eq!(super::parse("10MB"), Ok(10 << 20));
        assert_eq!(super::parse("1KiB"), Ok(1024));
        assert_eq!(super::parse("100B"), Ok(100));
        assert_eq!(super::parse("0"), Ok(0));
        assert!(super::parse("10").is_err());
        assert!(super::parse("MB").is_err());
        assert!(super::parse("10XB").is_err());
    }
}
