//! An unprivileged user made for one test (security tests: what a local user can plant in a
//! world-writable directory before fsage, running as root, comes along). The user is made with
//! `useradd` under a unique name, and dropping the guard stops every process that runs as it
//! (found by uid in /proc: the user is this test's own, so they are all this test's) and removes
//! it with `userdel`.

use crate::{need_root_and, run_cmd, Unavailable};
use std::path::Path;
use std::process::{Command, Output};

/// A user made by this test, removed on drop.
pub struct TestUser {
    name: String,
    uid: u32,
    gid: u32,
}

impl TestUser {
    /// Makes a new user `fsage-tNNNN...` with no home directory and no login shell.
    pub fn create() -> Result<TestUser, Unavailable> {
        need_root_and(&["useradd", "userdel", "setpriv"])?;
        // Unique among concurrent tests and processes; useradd caps names at 32 characters.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!("fsage-t{}-{nanos:x}", std::process::id());
        run_cmd(
            "useradd",
            &[
                "-M",
                "-N",
                "-s",
                "/usr/sbin/nologin",
                "-d",
                "/nonexistent",
                &name,
            ],
        )?;
        let id = |flag: &str| -> Result<u32, Unavailable> {
            let o = run_cmd("id", &[flag, &name])?;
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse()
                .map_err(|e| Unavailable(format!("id {flag} {name}: {e}")))
        };
        // Made: from here on a failure must still remove the user.
        let mut user = TestUser {
            name: name.clone(),
            uid: u32::MAX,
            gid: u32::MAX,
        };
        user.uid = id("-u")?;
        user.gid = id("-g")?;
        Ok(user)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }

    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// A command that runs `program` as this user (real and effective ids, no supplementary
    /// groups, no capabilities), for the test to add arguments to and run.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("setpriv");
        c.arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--clear-groups")
            .arg("--inh-caps=-all")
            .arg("--")
            .arg(program);
        c
    }

    /// Runs `sh -c SCRIPT` as this user and returns its output (whatever its exit status).
    pub fn sh(&self, script: &str) -> Output {
        self.command("sh")
            .arg("-c")
            .arg(script)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .current_dir("/")
            .output()
            .expect("setpriv runs")
    }

    /// Does `path` belong to this user?
    pub fn owns(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path).is_ok_and(|m| m.uid() == self.uid)
    }

    /// PIDs of the processes running as this user.
    fn processes(&self) -> Vec<i32> {
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        rd.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
                    s.lines().any(|l| {
                        l.strip_prefix("Uid:")
                            .and_then(|r| r.split_whitespace().next())
                            .and_then(|u| u.parse::<u32>().ok())
                            == Some(self.uid)
                    })
                })
            })
            .collect()
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        if self.uid != u32::MAX {
            for _ in 0..3 {
                let pids = self.processes();
                if pids.is_empty() {
                    break;
                }
                for pid in pids {
                    let _ = rustix::process::kill_process(
                        rustix::process::Pid::from_raw(pid).expect("a positive pid"),
                        rustix::process::Signal::KILL,
                    );
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        if let Err(e) = run_cmd("userdel", &[&self.name]) {
            eprintln!("cleanup: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_user_is_unprivileged_and_removed() {
        let user = match TestUser::create() {
            Ok(u) => u,
            Err(reason) => {
                crate::skip("a_test_user_is_unprivileged_and_removed", reason);
                return;
            }
        };
        let name = user.name().to_string();
        let out = user.sh("id -u; touch /etc/fsage-test-must-fail 2>/dev/null && echo WROTE");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().next(), Some(user.uid().to_string().as_str()));
        assert!(
            !text.contains("WROTE"),
            "an unprivileged user wrote to /etc"
        );
        assert_ne!(user.uid(), 0);
        drop(user);
        let gone = Command::new("id").arg(&name).output().unwrap();
        assert!(!gone.status.success(), "{name} is still there");
    }
}
