//! The kernel modules a guest needs, with their dependencies in load order. Read from each
//! module's `.modinfo` section (`depends=`, `softdep=pre:`) rather than `modules.dep`, because a
//! Debian kernel package unpacked without its postinst has no `modules.dep` (depmod never ran).

use crate::{Error, Result};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What every guest loads: the virtio PCI transport, block devices, the 9p root, and loop
/// devices (fsage mounts image files on them).
pub const BOOT: &[&str] = &["virtio_pci", "virtio_blk", "9pnet_virtio", "9p", "loop"];

/// The modules of each file system fsage can make, from its descriptor (a name fsage does not
/// know is taken as a module name).
pub fn fs_modules(fs: &str) -> Vec<&str> {
    match fsage_sys::FsKind::by_name(fs) {
        Some(k) => k.guest_modules().to_vec(),
        None => vec![fs],
    }
}

/// The `.ko` (or `.ko.xz`) files of a kernel's module tree, by normalised name (`-` as `_`).
pub struct ModuleIndex {
    files: BTreeMap<String, PathBuf>,
    builtin: HashSet<String>,
}

/// A module's name as the kernel spells it: file stem, dashes as underscores.
fn module_name(file: &str) -> Option<String> {
    let stem = file
        .strip_suffix(".ko")
        .or_else(|| file.strip_suffix(".ko.xz"))?;
    Some(stem.replace('-', "_"))
}

impl ModuleIndex {
    /// Indexes `dir` (a `lib/modules/RELEASE` directory).
    pub fn open(dir: &Path) -> Result<ModuleIndex> {
        let mut files = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let rd = std::fs::read_dir(&d)
                .map_err(|e| Error::input(format!("{}: cannot list modules: {e}", d.display())))?;
            for ent in rd.flatten() {
                let p = ent.path();
                if ent.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    stack.push(p);
                } else if let Some(n) = ent.file_name().to_str().and_then(module_name) {
                    files.entry(n).or_insert(p);
                }
            }
        }
        if files.is_empty() {
            return Err(Error::input(format!(
                "{}: no kernel modules (.ko) there",
                dir.display()
            )));
        }
        let builtin = std::fs::read_to_string(dir.join("modules.builtin"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.rsplit('/').next().and_then(module_name))
            .collect();
        Ok(ModuleIndex { files, builtin })
    }

    pub fn path(&self, name: &str) -> Option<&Path> {
        self.files.get(name).map(PathBuf::as_path)
    }

    /// `names` and everything they need, each after its dependencies. Names built into the
    /// kernel are left out; a name that is neither built in nor a module is an error.
    pub fn load_order(&self, names: &[&str]) -> Result<Vec<String>> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        for n in names {
            let n = n.replace('-', "_");
            if self.builtin.contains(&n) {
                continue;
            }
            if !self.files.contains_key(&n) {
                return Err(Error::input(format!(
                    "kernel module {n}: neither built into this kernel nor among its modules"
                )));
            }
            self.visit(&n, &mut seen, &mut order, 0)?;
        }
        Ok(order)
    }

    fn visit(
        &self,
        name: &str,
        seen: &mut HashSet<String>,
        order: &mut Vec<String>,
        depth: usize,
    ) -> Result<()> {
        if !seen.insert(name.to_string()) {
            return Ok(());
        }
        let Some(path) = self.files.get(name) else {
            return Ok(()); // built in, or an optional soft dependency this kernel lacks
        };
        if depth > 64 {
            return Err(Error::operation(format!(
                "{name}: module dependencies nest too deep"
            )));
        }
        let info = modinfo(&read_module(path)?)
            .map_err(|e| Error::operation(format!("{}: {e}", path.display())))?;
        for soft in &info.softdeps {
            if let Some(m) = self.resolve_alias(soft) {
                self.visit(&m, seen, order, depth + 1)?;
            }
        }
        for dep in &info.depends {
            self.visit(dep, seen, order, depth + 1)?;
        }
        order.push(name.to_string());
        Ok(())
    }

    /// A soft dependency names an alias (`crypto-crc32c`, `blake2b-256`, `xxhash64`): the module
    /// of that name, else its generic implementation. Best effort: one not found is skipped, as
    /// modprobe does when nothing provides it.
    fn resolve_alias(&self, alias: &str) -> Option<String> {
        let a = alias
            .strip_prefix("crypto-")
            .unwrap_or(alias)
            .replace('-', "_");
        let base = a
            .split('_')
            .next()
            .unwrap_or(&a)
            .trim_end_matches(|c: char| c.is_ascii_digit());
        [a.clone(), format!("{a}_generic"), format!("{base}_generic")]
            .into_iter()
            .find(|c| self.files.contains_key(c))
    }
}

/// A module file's bytes, decompressed if it is `.ko.xz` (with the `xz` tool).
pub fn read_module(path: &Path) -> Result<Vec<u8>> {
    if path.extension().is_some_and(|e| e == "xz") {
        let xz = fsage_sys::find_cmd("xz").ok_or_else(|| {
            Error::input(format!(
                "{}: compressed with xz, and xz is not installed (apt-get install xz-utils)",
                path.display()
            ))
        })?;
        let o = Command::new(xz)
            .arg("-dc")
            .arg(path)
            .output()
            .map_err(|e| Error::operation(format!("xz: cannot run: {e}")))?;
        if !o.status.success() {
            return Err(Error::operation(format!(
                "xz -dc {}: {}",
                path.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            )));
        }
        return Ok(o.stdout);
    }
    std::fs::read(path).map_err(|e| Error::io(path, "cannot read the module", e))
}

/// What `.modinfo` says about loading a module.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ModInfo {
    pub depends: Vec<String>,
    /// Aliases named by `softdep=pre: ...`.
    pub softdeps: Vec<String>,
}

/// Why a module's `.modinfo` cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ModInfoError {
    #[error("not a 64-bit little-endian ELF module")]
    NotElf64,
    #[error("truncated ELF")]
    Truncated,
    #[error("truncated section table")]
    TruncatedSectionTable,
    #[error("bad section name")]
    BadSectionName,
    #[error("truncated .modinfo")]
    TruncatedModinfo,
}

/// Reads the `.modinfo` section of a 64-bit little-endian ELF module.
pub fn modinfo(elf: &[u8]) -> std::result::Result<ModInfo, ModInfoError> {
    let u16_at = |o: usize| -> std::result::Result<u16, ModInfoError> {
        elf.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or(ModInfoError::Truncated)
    };
    let u64_at = |o: usize| -> std::result::Result<u64, ModInfoError> {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .ok_or(ModInfoError::Truncated)
    };
    if elf.get(..6) != Some(b"\x7fELF\x02\x01") {
        return Err(ModInfoError::NotElf64);
    }
    let shoff = u64_at(0x28)? as usize;
    let shentsize = u16_at(0x3a)? as usize;
    let shnum = u16_at(0x3c)? as usize;
    let shstrndx = u16_at(0x3e)? as usize;
    let sec = |i: usize| -> std::result::Result<(usize, usize, usize), ModInfoError> {
        let h = shoff + i * shentsize;
        let name = elf
            .get(h..h + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as usize)
            .ok_or(ModInfoError::TruncatedSectionTable)?;
        Ok((name, u64_at(h + 0x18)? as usize, u64_at(h + 0x20)? as usize))
    };
    let (_, strtab, _) = sec(shstrndx)?;
    for i in 0..shnum {
        let (name, off, size) = sec(i)?;
        let n = elf
            .get(strtab + name..)
            .ok_or(ModInfoError::BadSectionName)?;
        let n = &n[..n.iter().position(|&b| b == 0).unwrap_or(0)];
        if n != b".modinfo" {
            continue;
        }
        let data = elf
            .get(off..off + size)
            .ok_or(ModInfoError::TruncatedModinfo)?;
        let mut info = ModInfo::default();
        for kv in data.split(|&b| b == 0) {
            let kv = String::from_utf8_lossy(kv);
            if let Some(d) = kv.strip_prefix("depends=") {
                info.depends
                    .extend(d.split(',').filter(|s| !s.is_empty()).map(String::from));
            } else if let Some(s) = kv.strip_prefix("softdep=") {
                // "pre: a b post: c": only the pre-dependencies must load first.
                let mut pre = false;
                for w in s.split_whitespace() {
                    match w {
                        "pre:" => pre = true,
                        "post:" => pre = false,
                        w if pre => info.softdeps.push(w.to_string()),
                        _ => {}
                    }
                }
            }
        }
        return Ok(info);
    }
    Ok(ModInfo::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 with a section-name table and one `.modinfo` section.
    fn elf_with_modinfo(modinfo: &[u8]) -> Vec<u8> {
        let shstr = b"\0.shstrtab\0.modinfo\0";
        let mut e = vec![0u8; 64];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let shstr_off = e.len();
        e.extend_from_slice(shstr);
        let mi_off = e.len();
        e.extend_from_slice(modinfo);
        while e.len() % 8 != 0 {
            e.push(0);
        }
        let shoff = e.len();
        let mut sh = |name: u32, off: usize, size: usize| {
            let mut h = vec![0u8; 64];
            h[..4].copy_from_slice(&name.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            e.extend_from_slice(&h);
        };
        sh(0, 0, 0);
        sh(1, shstr_off, shstr.len());
        sh(11, mi_off, modinfo.len());
        e[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        e[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        e[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        e[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        e
    }

    #[test]
    fn depends_and_pre_softdeps_are_read() {
        let elf = elf_with_modinfo(
            b"license=GPL\0softdep=pre: crc32c post: foo\0depends=jbd2,mbcache,crc16\0",
        );
        let i = modinfo(&elf).unwrap();
        assert_eq!(i.depends, ["jbd2", "mbcache", "crc16"]);
        assert_eq!(i.softdeps, ["crc32c"]);
    }

    #[test]
    fn a_non_elf_file_is_refused() {
        assert!(modinfo(b"hello").is_err());
    }

    #[test]
    fn load_order_puts_dependencies_first_and_skips_builtins() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("kernel");
        std::fs::create_dir_all(&k).unwrap();
        std::fs::write(k.join("a.ko"), elf_with_modinfo(b"depends=b_mod,c\0")).unwrap();
        std::fs::write(
            k.join("b-mod.ko"),
            elf_with_modinfo(b"depends=\0softdep=pre: crypto-x\0"),
        )
        .unwrap();
        std::fs::write(k.join("x_generic.ko"), elf_with_modinfo(b"depends=\0")).unwrap();
        std::fs::write(d.path().join("modules.builtin"), "kernel/c.ko\n").unwrap();
        let idx = ModuleIndex::open(d.path()).unwrap();
        assert_eq!(idx.load_order(&["a"]).unwrap(), ["x_generic", "b_mod", "a"]);
        assert!(idx.load_order(&["c"]).unwrap().is_empty());
        let e = idx.load_order(&["nope"]).unwrap_err();
        assert!(e.message.contains("nope"), "{e}");
    }
}
