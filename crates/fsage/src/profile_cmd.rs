//! `fsage profile list|show|import`.

use crate::cli::ProfileCmd;
#[allow(unused_imports)]
use crate::exit::{bad_input, CmdResult};
use fsage_exec::preflight::estimate_seconds;
use fsage_profile::{
    builtin, builtin_names, human_bytes, parse_size, render_tables, to_toml, Fullness,
};
use fsage_sys::write_atomic;

pub fn run(cmd: ProfileCmd) -> CmdResult {
    match cmd {
        ProfileCmd::Extract(args) => crate::frag_cmd::extract(args),
        ProfileCmd::List => {
            println!(
                "{:<10} {:>9} {:>6} {:>6} {:>6}  description",
                "name", "fullness", "sizes", "depths", "ages"
            );
            for name in builtin_names() {
                let p = builtin(name).expect("built-ins parse");
                println!(
                    "{:<10} {:>9} {:>6} {:>6} {:>6}  {}",
                    p.name,
                    p.fullness.get(),
                    p.sizes.len(),
                    p.depths.len(),
                    p.ages.len(),
                    p.description
                );
            }
            Ok(())
        }
        ProfileCmd::Show {
            profile,
            capacity,
            fullness,
            block_size,
            seed,
            toml,
        } => {
            let p = fsage_profile::resolve(&profile)?;
            if toml {
                print!("{}", to_toml(&p));
                return Ok(());
            }
            let capacity = parse_size(&capacity)
                .map_err(|e| bad_input(format!("--capacity {capacity:?}: {e}")))?;
            let block_size = parse_size(&block_size)
                .map_err(|e| bad_input(format!("--block-size {block_size:?}: {e}")))?;
            // The same checks as `fsage age`, before anything is printed.
            let (plan, mem) = fsage_lab::age::plan_at(&p, capacity, fullness, block_size, seed)?;
            let u = plan.config().fullness;
            print!("{}", render_tables(&p));
            let t = plan.total();
            let k = plan.rapid_files();
            println!(
                "\nAt {} and fullness {u} (seed {seed}): {} directories, K = {k} files after the rapid phase, \
                 T = {t} ticks to converge ({:.1} × K), about {} written; planner memory about {}.",
                human_bytes(capacity),
                plan.tree().len() - 1,
                t as f64 / k.max(1) as f64,
                human_bytes(plan.expected_bytes_written()),
                human_bytes(mem.bytes)
            );
            println!(
                "Estimated time to T: {} as a dry run, {} on ext4 in memory (measured speeds, \
                 BENCHMARKS.md; slower devices take longer).",
                fsage_profile::human_duration(estimate_seconds(t, true)),
                fsage_profile::human_duration(estimate_seconds(t, false))
            );
            for u in plan.unmeetable_bins() {
                println!(
                    "Size bin {} (target {:.4}%) cannot be met at this capacity: {}.",
                    u.bin,
                    100.0 * u.target_fraction,
                    u.reason
                );
            }
            Ok(())
        }
        ProfileCmd::Import {
            dir,
            name,
            fullness,
            description,
            source,
            output,
            force,
        } => {
            let name = name.unwrap_or_else(|| {
                dir.file_name()
                    .map_or_else(|| "imported".into(), |n| n.to_string_lossy().into_owned())
            });
            let mut p = fsage_profile::import_geriatrix(&dir, &name)?;
            if let Some(u) = fullness {
                p.fullness = Fullness::new(u)
                    .ok_or_else(|| bad_input(format!("--fullness {u}: must lie in (0, 1]")))?;
            }
            if !description.is_empty() {
                p.description = description;
            }
            if !source.is_empty() {
                p.source = source;
            }
            let text = to_toml(&p);
            match output {
                Some(path) => {
                    if path.exists() && !force {
                        return Err(bad_input(format!(
                            "{}: exists; --force to overwrite it",
                            path.display()
                        )));
                    }
                    write_atomic(&path, text.as_bytes())?;
                    eprintln!("fsage: wrote profile {} to {}", p.name, path.display());
                }
                None => print!("{text}"),
            }
            Ok(())
        }
    }
}
