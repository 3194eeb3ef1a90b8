//! A sampled run's time series (`bench run --sample`, an experiment's `sample`): CPU utilization,
//! the device's requests in flight and busy time, and ops/s over time, so that a run that slows
//! down shows whether the CPUs or the device held it (the slippery slope's Figure 7).

use crate::html::page::{esc, fig, plot_or_note, table};
use crate::html::plots::{self, Line, LineChart};
use fsage_results::bench::Timeline;
use std::fmt::Write as _;

fn line(name: &str, color: usize, points: Vec<(f64, f64)>) -> Line {
    Line {
        name: name.into(),
        color: plots::color(color),
        points,
        intervals: Vec::new(),
        dash: plots::Dash::Solid,
        dots: false,
        rings: Vec::new(),
        marker: None,
        end_label: None,
    }
}

/// The charts of one timeline (`title` names the run), with the lock statistics or why none.
pub(crate) fn charts(tl: &Timeline, title: &str) -> String {
    let pts = &tl.points;
    if pts.is_empty() {
        return "<p class=\"note\">(no sample: the run was shorter than one interval)</p>".into();
    }
    let x1 = pts.iter().map(|p| p.t_secs).fold(0.0, f64::max);
    let series = |f: fn(&fsage_results::bench::TimelinePoint) -> f64| -> Vec<(f64, f64)> {
        pts.iter().map(|p| (p.t_secs, f(p))).collect()
    };
    let chart = |title: String, y: &str, lines: Vec<Line>| LineChart {
        title,
        x_desc: "time since the threads started (s)".into(),
        y_desc: y.into(),
        x_range: (0.0, x1.max(tl.interval_secs)),
        lines,
        size: (440, 300),
        reference_y: None,
        clip_outliers: false,
    };
    let mut cpu = vec![
        line("user", 0, series(|p| p.cpu_user)),
        line("system", 1, series(|p| p.cpu_system)),
        line("iowait", 2, series(|p| p.cpu_iowait)),
        line("idle", 3, series(|p| p.cpu_idle)),
    ];
    if pts.iter().any(|p| p.cpu_steal > 0.0) {
        cpu.push(line("steal", 4, series(|p| p.cpu_steal)));
    }
    let mut parts = vec![plot_or_note(plots::lines(&chart(
        format!("{title}: CPU utilization, whole machine ({} CPUs)", tl.cpus),
        "share of all CPUs' time (%)",
        cpu,
    )))];
    if pts.iter().any(|p| p.in_flight.is_some()) {
        let inflight = pts
            .iter()
            .filter_map(|p| Some((p.t_secs, p.in_flight?)))
            .collect();
        parts.push(plot_or_note(plots::lines(&chart(
            format!(
                "{title}: requests in flight at {}",
                tl.device.as_deref().unwrap_or("the device")
            ),
            "average requests in flight",
            vec![line("in flight", 5, inflight)],
        ))));
    }
    parts.push(plot_or_note(plots::lines(&chart(
        format!("{title}: throughput"),
        "operations per second",
        vec![line("ops/s", 6, series(|p| p.ops_per_sec))],
    ))));
    let mut c = fig(&parts);
    let mean = |f: fn(&fsage_results::bench::TimelinePoint) -> Option<f64>| {
        let v: Vec<f64> = pts.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let _ = writeln!(
        c,
        "<p class=\"note\">Every {:.3} s, {} points. Means: user {:.1}%, system {:.1}%, iowait \
         {:.1}%, idle {:.1}%{}.{}</p>",
        tl.interval_secs,
        pts.len(),
        mean(|p| Some(p.cpu_user)).unwrap_or(0.0),
        mean(|p| Some(p.cpu_system)).unwrap_or(0.0),
        mean(|p| Some(p.cpu_iowait)).unwrap_or(0.0),
        mean(|p| Some(p.cpu_idle)).unwrap_or(0.0),
        match (mean(|p| p.in_flight), mean(|p| p.device_busy)) {
            (Some(f), Some(b)) => format!("; the device: {f:.2} requests in flight, busy {b:.0}%"),
            _ => String::new(),
        },
        match &tl.device_note {
            Some(n) => format!(" No device counters: {}.", esc(n)),
            None => String::new(),
        }
    );
    if !tl.locks.is_empty() {
        let rows: Vec<Vec<String>> = tl
            .locks
            .iter()
            .map(|l| {
                vec![
                    l.name.clone(),
                    l.contentions.to_string(),
                    format!("{:.1}", l.wait_total_us),
                ]
            })
            .collect();
        c.push_str(&table(
            &["lock (most contended)", "contentions", "wait µs"],
            &rows,
        ));
    } else if let Some(n) = &tl.locks_note {
        let _ = writeln!(c, "<p class=\"note\">Lock contention: {}.</p>", esc(n));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_results::bench::{LockContention, TimelinePoint};

    fn point(t: f64, user: f64, in_flight: Option<f64>) -> TimelinePoint {
        TimelinePoint {
            t_secs: t,
            ops_per_sec: 1000.0 * t,
            cpu_user: user,
            cpu_system: 10.0,
            cpu_iowait: 0.0,
            cpu_idle: 90.0 - user,
            cpu_steal: 0.0,
            in_flight,
            device_busy: in_flight.map(|_| 50.0),
            device_iops: in_flight.map(|_| 100.0),
        }
    }

    #[test]
    fn a_timeline_draws_cpu_device_and_throughput_with_its_means() {
        let mut tl = Timeline {
            interval_secs: 1.0,
            device: Some("/dev/loop7".into()),
            device_note: None,
            cpus: 2,
            points: vec![point(1.0, 20.0, Some(3.0)), point(2.0, 40.0, Some(5.0))],
            locks: Vec::new(),
            locks_note: Some("this kernel has no /proc/lock_stat".into()),
        };
        let h = charts(&tl, "nilfs2 at 0");
        assert_eq!(h.matches("<svg").count(), 3, "{h}");
        assert!(h.contains("requests in flight at /dev/loop7"));
        assert!(h.contains("user 30.0%"), "{h}");
        assert!(h.contains("4.00 requests in flight, busy 50%"), "{h}");
        assert!(h.contains("no /proc/lock_stat"));
        // No device: two charts and the reason; locks as a table.
        tl.device = None;
        tl.device_note = Some("on tmpfs".into());
        tl.points = vec![point(1.0, 20.0, None)];
        tl.locks = vec![LockContention {
            name: "&sbi->ns_segctor_sem".into(),
            contentions: 12,
            wait_total_us: 3.5,
        }];
        let h = charts(&tl, "x");
        assert_eq!(h.matches("<svg").count(), 2, "{h}");
        assert!(h.contains("No device counters: on tmpfs."));
        assert!(
            h.contains("&amp;sbi-&gt;ns_segctor_sem") && h.contains(">12<"),
            "{h}"
        );
        tl.points.clear();
        assert!(charts(&tl, "x").contains("no sample"));
    }
}
