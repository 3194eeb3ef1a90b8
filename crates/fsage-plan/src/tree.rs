//! The directory tree: the profile's number of directories at every depth, each the child of a
//! directory one level up, built once before the first file is made.

use crate::rng::Rng;
use fsage_profile::Profile;
use serde::{Deserialize, Serialize};

/// Index of a directory in [`DirTree`]; 0 is the target root.
pub type DirId = u32;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirTree {
    /// Parent of every directory (the root is its own parent).
    parent: Vec<DirId>,
    /// Path relative to the target root ("" for the root), built once: the op log and the POSIX
    /// backend need it on every operation.
    path: Vec<String>,
    /// First directory id at each depth, plus one past the last: depth d is `level[d]..level[d+1]`.
    level: Vec<DirId>,
    /// Depths where the profile gave fewer directories than its files need, and how many we made.
    pub adjusted: Vec<(u32, u64, u64)>,
}

impl DirTree {
    /// Builds the tree for `profile`. At each depth d >= 1 there are as many directories as the
    /// profile's `subdirs` at depth d-1; where that is zero but files or deeper directories need the
    /// depth, one directory is made and the change is recorded in `adjusted`.
    pub fn build(profile: &Profile, rng: &mut Rng) -> DirTree {
        let given = |d: u32| -> u64 {
            profile
                .depths
                .iter()
                .find(|b| b.depth + 1 == d)
                .map_or(0, |b| b.subdirs)
        };
        let max_file_depth = profile
            .depths
            .iter()
            .filter(|b| b.weight > 0.0)
            .map(|b| b.depth)
            .max()
            .unwrap_or(0);
        let max_dir_depth = profile
            .depths
            .iter()
            .filter(|b| b.subdirs > 0)
            .map(|b| b.depth + 1)
            .max()
            .unwrap_or(0);
        let deepest = max_file_depth.max(max_dir_depth);

        let mut tree = DirTree {
            parent: vec![0],
            path: vec![String::new()],
            level: vec![0, 1],
            adjusted: Vec::new(),
        };
        for d in 1..=deepest {
            let mut n = given(d);
            if n == 0 {
                tree.adjusted.push((d, 0, 1));
                n = 1;
            }
            let (plo, phi) = (tree.level[d as usize - 1], tree.level[d as usize]);
            for _ in 0..n {
                let id = tree.parent.len() as DirId;
                let parent = plo + rng.below((phi - plo) as u64) as DirId;
                let path = if parent == 0 {
                    format!("d{id}")
                } else {
                    format!("{}/d{id}", tree.path[parent as usize])
                };
                tree.parent.push(parent);
                tree.path.push(path);
            }
            tree.level.push(tree.parent.len() as DirId);
        }
        tree
    }

    /// Rebuilds a tree from directory paths as an op log lists them: parents first, depth by depth.
    pub fn from_paths(paths: &[String]) -> Result<DirTree, crate::PlanError> {
        let mut tree = DirTree {
            parent: vec![0],
            path: vec![String::new()],
            level: vec![0, 1],
            adjusted: Vec::new(),
        };
        let mut index = std::collections::HashMap::new();
        for p in paths {
            let (parent, depth) = match p.rsplit_once('/') {
                Some((parent, _)) => match index.get(parent) {
                    Some(&id) => (id, tree.depth(id) + 1),
                    None => {
                        return Err(crate::PlanError::BadTree(format!(
                            "directory {p} comes before its parent"
                        )))
                    }
                },
                None => (0, 1),
            };
            if p.is_empty() || p.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
                return Err(crate::PlanError::BadTree(format!(
                    "directory path {p:?} is not a plain relative path"
                )));
            }
            if depth < tree.max_depth() {
                return Err(crate::PlanError::BadTree(format!(
                    "directory {p} is listed after deeper ones"
                )));
            }
            while tree.max_depth() < depth {
                tree.level.push(tree.parent.len() as DirId);
            }
            let id = tree.parent.len() as DirId;
            tree.parent.push(parent);
            tree.path.push(p.clone());
            index.insert(p.as_str(), id);
            *tree.level.last_mut().expect("level has entries") = id + 1;
        }
        Ok(tree)
    }

    /// Heap bytes held by the tree.
    pub fn heap_bytes(&self) -> usize {
        self.parent.capacity() * 4
            + self.level.capacity() * 4
            + self.path.iter().map(|p| p.capacity() + 24).sum::<usize>()
    }

    /// Number of directories, the root included.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Directories below the root, parents before children: the order to make them in.
    pub fn created(&self) -> impl Iterator<Item = (DirId, &str)> {
        (1..self.parent.len()).map(|i| (i as DirId, self.path[i].as_str()))
    }

    pub fn path(&self, dir: DirId) -> &str {
        &self.path[dir as usize]
    }

    pub fn parent(&self, dir: DirId) -> DirId {
        self.parent[dir as usize]
    }

    /// Deepest depth that has a directory.
    pub fn max_depth(&self) -> u32 {
        (self.level.len() - 2) as u32
    }

    /// Number of directories at `depth` (1 for the root's depth 0).
    pub fn count_at(&self, depth: u32) -> u64 {
        let d = depth as usize;
        if d + 1 >= self.level.len() {
            0
        } else {
            (self.level[d + 1] - self.level[d]) as u64
        }
    }

    /// Depth of `dir` (0 for the root).
    pub fn depth(&self, dir: DirId) -> u32 {
        (self.level.partition_point(|&start| start <= dir) - 1) as u32
    }

    /// A directory at `depth` chosen uniformly; `depth` must be at most `max_depth()`.
    pub fn pick(&self, depth: u32, rng: &mut Rng) -> DirId {
        let d = depth as usize;
        let (lo, hi) = (self.level[d], self.level[d + 1]);
        lo + rng.below((hi - lo) as u64) as DirId
    }

    /// Path of file `name` in `dir`, relative to the target root.
    pub fn file_path(&self, dir: DirId, name: &str) -> String {
        let p = self.path(dir);
        if p.is_empty() {
            name.to_string()
        } else {
            format!("{p}/{name}")
        }
    }
}
