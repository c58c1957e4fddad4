//! Provenance sidecars: `FILE.provenance.txt` beside every CSV the lab and its scripts write
//! (the scripts call `dwarf2btf-lab provenance`, through `scripts/bench/provenance.sh`), with
//! the commit and compiler of the build, the CPU model, the cores, the load, the date and the
//! command.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use dwarf2btf::functions::trace::{COMMIT, PIPELINE_VERSION, RUSTC};

/// The CPU model (`/proc/cpuinfo`'s first `model name`), or "unknown".
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The load averages (`/proc/loadavg`'s first three fields), or "unknown".
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// `secs` since the epoch as `YYYY-MM-DD HH:MM:SS UTC` (the civil calendar, proleptic
/// Gregorian).
pub fn utc(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The sidecar's text for a file made by `command`.
pub fn text(command: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let or_unknown = |s: &str| {
        if s.is_empty() {
            "unknown".to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "date: {}\ncommit: {}\nrustc: {}\ncpu: {}\ncores: {cores}\nload: {}\n\
         pipeline version: {PIPELINE_VERSION}\ncommand: {command}\n",
        utc(now),
        or_unknown(COMMIT),
        or_unknown(RUSTC),
        cpu_model(),
        load(),
    )
}

/// Writes `FILE.provenance.txt` beside `file`.
pub fn write(file: &Path, command: &str) -> Result<(), String> {
    let mut path = file.as_os_str().to_owned();
    path.push(".provenance.txt");
    std::fs::write(&path, text(command)).map_err(|e| format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_796_481_522), "2026-12-05 14:38:42 UTC");
    }

    #[test]
    fn the_sidecar_names_every_field() {
        let t = text("dwarf2btf-lab replay x");
        for field in [
            "date: ",
            "commit: ",
            "rustc: ",
            "cpu: ",
            "cores: ",
            "load: ",
            "command: ",
        ] {
            assert!(t.contains(field), "{field} missing from\n{t}");
        }
    }
}
