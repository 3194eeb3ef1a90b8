//! The real `git` CLI: the source repository (the top of a repository, or a bundle cloned to a
//! bare repository named after the target), its first-parent commit list, and the aged
//! repository's pulls.
//!
//! Every git runs in its own process group, so a Ctrl-C at the terminal reaches fsage alone and
//! the pull under way finishes; fsage stops between commits. Global and system configuration are
//! left out (`GIT_CONFIG_GLOBAL=/dev/null`, `GIT_CONFIG_NOSYSTEM=1`), so a user's settings cannot
//! change what is replayed. A git outlives fsage by no more than a signal: it is killed when
//! fsage dies.

use crate::{Error, Result};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The empty tree's id (the diff base of the first commit in tree mode).
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// `git ARGS` in `dir` as fsage runs it (see the module doc).
pub fn command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            // Die with fsage (kill -9 included): a pull left running would race a resume.
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            Ok(())
        });
    }
    c
}

/// Runs `git ARGS` in `dir`; its standard output, or an error with the command and its stderr.
pub fn run(dir: &Path, args: &[&str]) -> Result<String> {
    let out = command(dir, args)
        .output()
        .map_err(|e| Error::input(format!("cannot run git (is it installed?): {e}")))?;
    if !out.status.success() {
        return Err(Error::operation(format!(
            "`git {}` in {} failed ({}): {}",
            args.join(" "),
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    String::from_utf8(out.stdout)
        .map_err(|_| Error::operation(format!("`git {}`: output is not UTF-8", args.join(" "))))
}

/// Checks the git CLI is there; its version line.
pub fn version() -> Result<String> {
    run(Path::new("/"), &["--version"]).map(|s| s.trim().to_string())
}

/// The repository commits are replayed from.
#[derive(Debug)]
pub struct Source {
    /// What `git pull` is given (the repository, or the bare clone of a bundle).
    pub path: PathBuf,
    /// What the user gave.
    pub origin: PathBuf,
    /// A short name for the aged tree's directory (`zlib` for `zlib.bundle`).
    pub name: String,
    _clone: Option<CloneGuard>,
}

/// Removes a bundle's clone when the run ends (however it ends, short of kill -9: then the next
/// run on the same target reuses or replaces it, by its name).
#[derive(Debug)]
struct CloneGuard(PathBuf);

impl Drop for CloneGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes what is at `path` if it is a directory fsage could have made there (a bare clone, or
/// the start of one); refuses anything else.
fn remove_clone(path: &Path) -> Result<()> {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let ours = m.is_dir()
        && std::fs::read_dir(path)
            .map_err(|e| crate::Error::io(path, "readdir", e))?
            .filter_map(|e| e.ok())
            .all(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                [
                    "HEAD",
                    "config",
                    "description",
                    "hooks",
                    "info",
                    "objects",
                    "refs",
                    "packed-refs",
                    "branches",
                    "shallow",
                    "FETCH_HEAD",
                ]
                .contains(&n.as_ref())
                    || n.ends_with(".lock")
            });
    if !ours {
        return Err(Error::input(format!(
            "{}: in the way of the bundle's clone and not a bare repository fsage made; remove it",
            path.display()
        )));
    }
    std::fs::remove_dir_all(path).map_err(|e| crate::Error::io(path, "remove", e))
}

/// Whether `path` is a complete bare repository (a clone a killed run left).
fn is_bare_repo(path: &Path) -> bool {
    path.join("HEAD").is_file()
        && run(path, &["rev-parse", "--is-bare-repository"]).is_ok_and(|s| s.trim() == "true")
}

/// Opens `repo`: the top of a Git repository (its working tree, or a bare repository) or a
/// bundle file, which is cloned into a bare repository at `clone` first (made under a temporary
/// name and renamed, so that `clone` is whole or absent). With `reuse`, a clone already at
/// `clone` (a killed run's) is used as it is; else it is replaced. The clone is removed when the
/// [`Source`] is dropped.
pub fn open_source(repo: &Path, clone: &Path, reuse: bool) -> Result<Source> {
    // Pulls run in the aged tree: the clone is named by an absolute path.
    let clone = &std::path::absolute(clone).map_err(|e| crate::Error::io(clone, "", e))?;
    let meta = std::fs::metadata(repo).map_err(|e| crate::Error::io(repo, "the repository", e))?;
    let origin = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    let stem = origin
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = stem
        .strip_suffix(".bundle")
        .or_else(|| stem.strip_suffix(".git"))
        .unwrap_or(&stem)
        .to_string();
    let name = if !stem.is_empty()
        && stem != "."
        && stem != ".."
        && stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        stem
    } else {
        "repo".to_string()
    };
    if meta.is_file() {
        run(
            Path::new("/"),
            &["bundle", "list-heads", &origin.to_string_lossy()],
        )
        .map_err(|e| {
            Error::input(format!(
                "{}: neither a Git repository nor a bundle: {}",
                repo.display(),
                e.message
            ))
        })?;
        let partial = PathBuf::from(format!("{}.tmp", clone.to_string_lossy()));
        remove_clone(&partial)?;
        if !(reuse && is_bare_repo(clone)) {
            remove_clone(clone)?;
            let dir = clone
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let made = run(
                dir,
                &[
                    "clone",
                    "-q",
                    "--bare",
                    &origin.to_string_lossy(),
                    &partial.to_string_lossy(),
                ],
            )
            .and_then(|_| {
                std::fs::rename(&partial, clone).map_err(|e| crate::Error::io(clone, "rename", e))
            });
            if let Err(e) = made {
                let _ = std::fs::remove_dir_all(&partial);
                return Err(e);
            }
        }
        return Ok(Source {
            path: clone.to_path_buf(),
            origin,
            name,
            _clone: Some(CloneGuard(clone.to_path_buf())),
        });
    }
    if !meta.is_dir() {
        return Err(Error::input(format!(
            "{}: not a repository directory or a bundle",
            repo.display()
        )));
    }
    let facts = run(
        &origin,
        &["rev-parse", "--is-inside-git-dir", "--absolute-git-dir"],
    )
    .map_err(|_| {
        Error::input(format!(
            "{}: not a Git repository (no .git found by `git rev-parse`)",
            repo.display()
        ))
    })?;
    let mut lines = facts.lines();
    let in_git_dir = lines.next() == Some("true");
    let git_dir = PathBuf::from(lines.next().unwrap_or_default());
    // Pulls name the source by path: a directory inside a repository is not one, and would be
    // found only after the file system was made.
    if in_git_dir {
        if git_dir != origin {
            return Err(Error::input(format!(
                "{}: inside the Git directory {}; give the repository itself",
                repo.display(),
                git_dir.display()
            )));
        }
    } else {
        let top = run(&origin, &["rev-parse", "--show-toplevel"])?;
        let top = PathBuf::from(top.trim());
        if top != origin {
            return Err(Error::input(format!(
                "{}: a subdirectory of the working tree {}; give the repository's top directory \
                 (its whole history is replayed)",
                repo.display(),
                top.display()
            )));
        }
    }
    Ok(Source {
        path: origin.clone(),
        origin,
        name,
        _clone: None,
    })
}

/// One commit of the replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub id: String,
    /// Committer date, strict ISO 8601.
    pub date: String,
}

/// Which commits to replay.
#[derive(Debug, Clone, Default)]
pub struct Range {
    /// The first commit (inclusive; on the first-parent line of the tip).
    pub first: Option<String>,
    /// The tip (inclusive): a revision; default the branch, else HEAD. Not with `branch` (which
    /// names the tip too): the two are refused together.
    pub last: Option<String>,
    pub branch: Option<String>,
    /// At most this many commits.
    pub commits: Option<u64>,
}

fn resolve(src: &Path, rev: &str, what: &str) -> Result<String> {
    if rev.starts_with('-') {
        return Err(Error::input(format!("{what} {rev:?}: not a revision")));
    }
    run(
        src,
        &["rev-parse", "--verify", "-q", &format!("{rev}^{{commit}}")],
    )
    .map(|s| s.trim().to_string())
    .map_err(|_| Error::input(format!("{what} {rev:?}: no such commit in the repository")))
}

/// The commits to replay, oldest first: `git rev-list --reverse --first-parent` of the tip, cut
/// at `first` and to `commits`.
pub fn commit_list(src: &Path, range: &Range) -> Result<Vec<Commit>> {
    let tip = match (&range.last, &range.branch) {
        (Some(_), Some(b)) => {
            return Err(Error::input(format!(
                "both a branch ({b}) and a last commit name the tip of the replay; give one"
            )))
        }
        (Some(l), None) => resolve(src, l, "the last commit")?,
        (None, Some(b)) => resolve(src, &format!("refs/heads/{b}"), "the branch")?,
        (None, None) => resolve(src, "HEAD", "HEAD").map_err(|_| {
            Error::input(format!(
                "{}: HEAD names no commit; give a branch or the last commit",
                src.display()
            ))
        })?,
    };
    let out = run(
        src,
        &[
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H %cI",
            &tip,
        ],
    )?;
    let mut list: Vec<Commit> = out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, date)| Commit {
            id: id.to_string(),
            date: date.to_string(),
        })
        .collect();
    if let Some(f) = &range.first {
        let id = resolve(src, f, "the first commit")?;
        let at = list.iter().position(|c| c.id == id).ok_or_else(|| {
            Error::input(format!(
                "the first commit {f:?} ({id}) is not on the first-parent line of the tip {tip}"
            ))
        })?;
        list.drain(..at);
    }
    if let Some(n) = range.commits {
        if n == 0 {
            return Err(Error::input("the number of commits must be at least 1"));
        }
        list.truncate(n as usize);
    }
    if list.is_empty() {
        return Err(Error::input("no commits to replay in that range"));
    }
    Ok(list)
}

/// Makes an empty repository at `dir` (which exists) for the pulls: `gc.auto 0` unless `gc`.
pub fn init_aged(dir: &Path, gc: bool) -> Result<()> {
    run(dir, &["init", "-q", "-b", "master", "."])?;
    let mut settings = vec![
        ("user.name", "fsage"),
        ("user.email", "fsage@localhost"),
        ("pull.rebase", "false"),
    ];
    if !gc {
        settings.push(("gc.auto", "0"));
    }
    for (k, v) in settings {
        run(dir, &["config", k, v])?;
    }
    Ok(())
}

/// The published step: `git pull --no-edit -q -s recursive -X theirs SRC SHA` (the source lets a
/// reachable commit be asked for by id).
pub fn pull(aged: &Path, src: &Path, id: &str) -> Result<()> {
    run(
        aged,
        &[
            "-c",
            "uploadpack.allowReachableSHA1InWant=true",
            "pull",
            "--no-edit",
            "-q",
            "-s",
            "recursive",
            "-X",
            "theirs",
            &src.to_string_lossy(),
            id,
        ],
    )
    .map(|_| ())
}

/// The commit HEAD of the repository at `dir` names, read from `.git` without starting git
/// (cheap enough to check after every pull); `None` on an unborn branch.
pub fn head(dir: &Path) -> Result<Option<String>> {
    let gd = dir.join(".git");
    let h = std::fs::read_to_string(gd.join("HEAD"))
        .map_err(|e| crate::Error::io(&gd.join("HEAD"), "read", e))?;
    let h = h.trim();
    let Some(r) = h.strip_prefix("ref: ") else {
        return Ok(Some(h.to_string()));
    };
    if let Ok(s) = std::fs::read_to_string(gd.join(r)) {
        return Ok(Some(s.trim().to_string()));
    }
    if let Ok(p) = std::fs::read_to_string(gd.join("packed-refs")) {
        for l in p.lines() {
            if let Some((id, name)) = l.split_once(' ') {
                if name == r {
                    return Ok(Some(id.to_string()));
                }
            }
        }
    }
    Ok(None)
}

/// Brings the working tree back to HEAD after a killed pull: removes a stale index lock, resets
/// the index and tree, and removes files a half-done checkout left.
pub fn restore_worktree(dir: &Path) -> Result<()> {
    let lock = dir.join(".git/index.lock");
    if lock.exists() {
        std::fs::remove_file(&lock).map_err(|e| crate::Error::io(&lock, "remove", e))?;
    }
    run(dir, &["reset", "-q", "--hard"])?;
    run(dir, &["clean", "-q", "-ffdx"])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus_allowed(pid: u32) -> String {
        cpus_allowed_in(&format!("/proc/{pid}/status"))
    }

    fn cpus_allowed_in(status: &str) -> String {
        let status = std::fs::read_to_string(status).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// `--one-cpu` pins fsage's thread; the gits it starts must run on that CPU alone (and on
    /// the CPUs fsage had once it is set free again).
    #[test]
    fn a_git_started_while_pinned_runs_on_that_cpu_alone() {
        let spawn = || {
            command(Path::new("/"), &["hash-object", "--stdin"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .expect("git runs")
        };
        let before = cpus_allowed_of_thread();
        let pinned = fsage_sys::cpu::Pinned::first_allowed().unwrap();
        let mut git = spawn();
        let during = cpus_allowed(git.id());
        let cpu = pinned.cpu();
        drop(git.stdin.take());
        assert!(git.wait().unwrap().success());
        drop(pinned);
        let mut git = spawn();
        let after = cpus_allowed(git.id());
        drop(git.stdin.take());
        assert!(git.wait().unwrap().success());
        assert_eq!(during, cpu.to_string());
        assert_eq!(after, before);
    }

    fn cpus_allowed_of_thread() -> String {
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        cpus_allowed_in(&format!("/proc/self/task/{tid}/status"))
    }
}
