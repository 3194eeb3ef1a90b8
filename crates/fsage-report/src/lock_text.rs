//! Lock contention by lock instance (a workload's `lock_contention`), as text: the instances
//! with the most wait, what each is when its callers tell, and where the waits came from.

use fsage_results::locks::LockReport;
use std::fmt::Write;

/// How many instances the text shows.
pub const SHOWN: usize = 8;

fn secs(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s >= 10.0 {
        format!("{s:.1} s")
    } else if s >= 0.01 {
        format!("{s:.3} s")
    } else {
        format!("{:.1} us", ns as f64 / 1e3)
    }
}

/// The report, each line indented by `indent`.
pub fn render(r: &LockReport, indent: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{indent}lock contention over {:.1} s (kernel {}): {} waits, {} in all{}{}",
        r.recorded_s,
        r.kernel,
        r.waits,
        secs(r.wait_total_ns),
        if r.unfinished > 0 {
            format!(", {} still waiting at the end (not counted)", r.unfinished)
        } else {
            String::new()
        },
        if r.lost_events > 0 {
            format!(
                "; {} trace events LOST: the waits are a lower bound",
                r.lost_events
            )
        } else {
            String::new()
        }
    );
    for l in r.locks.iter().take(SHOWN) {
        let _ = writeln!(
            o,
            "{indent}  {:>10} {:>6} waits (max {:>9}) {:<12} {} {}",
            secs(l.wait_total_ns),
            l.waits,
            secs(l.wait_max_ns),
            l.kind,
            l.addr,
            l.name.as_deref().unwrap_or("")
        );
        let callers: Vec<String> = l
            .callers
            .iter()
            .take(3)
            .map(|c| {
                let via = c.path.first().map_or(String::new(), |p| format!(" < {p}"));
                format!(
                    "{}{via} {} ({})",
                    c.function,
                    secs(c.wait_total_ns),
                    c.waits
                )
            })
            .collect();
        let _ = writeln!(o, "{indent}             from {}", callers.join("; "));
    }
    let more = r.locks.len().saturating_sub(SHOWN) as u64 + r.others;
    if more > 0 {
        let rest: u64 = r
            .locks
            .iter()
            .skip(SHOWN)
            .map(|l| l.wait_total_ns)
            .sum::<u64>()
            + r.others_wait_ns;
        let _ = writeln!(
            o,
            "{indent}  and {more} more instances, {} in all",
            secs(rest)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_results::locks::{LockCaller, LockInstance, DIR_RWSEM};

    #[test]
    fn the_most_waited_on_instances_are_listed_with_their_callers() {
        let inst = |addr: &str, ns: u64, name: Option<&str>| LockInstance {
            addr: addr.into(),
            kind: "rwsem".into(),
            name: name.map(String::from),
            identified_by: None,
            waits: 3,
            wait_total_ns: ns,
            wait_max_ns: ns / 2,
            write_waits: 3,
            callers: vec![LockCaller {
                function: "do_unlinkat".into(),
                path: vec!["__x64_sys_unlinkat".into()],
                waits: 3,
                wait_total_ns: ns,
            }],
        };
        let r = LockReport {
            source: "t".into(),
            kernel: "6.1.0-56-amd64".into(),
            recorded_s: 30.0,
            waits: 6,
            wait_total_ns: 3_500_000_000,
            unfinished: 0,
            lost_events: 2,
            locks: vec![
                inst("00000000aa", 3_000_000_000, Some(DIR_RWSEM)),
                inst("00000000bb", 500_000_000, None),
            ],
            others: 0,
            others_wait_ns: 0,
        };
        let t = render(&r, "  ");
        assert!(t.contains("6 waits, 3.500 s in all"), "{t}");
        assert!(t.contains("LOST"), "{t}");
        let first = t.lines().nth(1).unwrap();
        assert!(
            first.contains("3.000 s") && first.contains(DIR_RWSEM),
            "{t}"
        );
        assert!(
            t.contains("do_unlinkat < __x64_sys_unlinkat 3.000 s (3)"),
            "{t}"
        );
    }
}
