//! Groups: ordered sets of world ranks. MPI_GROUP_EMPTY is built in; user groups are
//! direct handles into the table below.
#![deny(unsafe_code)]
use crate::abi::*;
use crate::error::{err, MpiResult};
use std::sync::{Arc, RwLock};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// World ranks, in group rank order.
    pub ranks: Vec<usize>,
}

impl Group {
    pub fn size(&self) -> usize {
        self.ranks.len()
    }
    /// This process's rank in the group, if it is a member.
    pub fn rank_of_world(&self, w: usize) -> Option<usize> {
        self.ranks.iter().position(|&r| r == w)
    }
}

static TABLE: RwLock<Vec<Option<Arc<Group>>>> = RwLock::new(Vec::new());

/// Registers a group and returns its handle (MPI_GROUP_EMPTY for an empty group).
pub fn register(g: Group) -> i32 {
    if g.ranks.is_empty() {
        return MPI_GROUP_EMPTY;
    }
    let mut t = TABLE.write().unwrap();
    let idx = super::free_slot(&mut t);
    t[idx] = Some(Arc::new(g));
    direct_handle(OBJ_GROUP, idx)
}

/// Looks a group handle up.
pub fn get(h: i32, arg: &str) -> MpiResult<Arc<Group>> {
    if h == MPI_GROUP_EMPTY {
        return Ok(Arc::new(Group { ranks: Vec::new() }));
    }
    if h == MPI_GROUP_NULL {
        return Err(err(MPI_ERR_GROUP, format!("{arg} is MPI_GROUP_NULL")));
    }
    direct_index(h, OBJ_GROUP)
        .and_then(|i| TABLE.read().unwrap().get(i).cloned().flatten())
        .ok_or_else(|| {
            err(
                MPI_ERR_GROUP,
                format!("{arg}={h:#x} is not a valid group (never created, or freed)"),
            )
        })
}

/// Frees a group handle (MPI_GROUP_EMPTY may be "freed": it stays valid).
pub fn free(h: i32) -> MpiResult<()> {
    if h == MPI_GROUP_EMPTY {
        return Ok(());
    }
    get(h, "group")?;
    let i = direct_index(h, OBJ_GROUP).unwrap();
    TABLE.write().unwrap()[i] = None;
    Ok(())
}

/// Validates a list of distinct ranks of a group of `n`.
fn check_ranks(ranks: &[i32], n: usize, what: &str) -> MpiResult<()> {
    let mut seen = vec![false; n];
    for (i, &r) in ranks.iter().enumerate() {
        if r < 0 || r as usize >= n {
            return Err(err(
                MPI_ERR_RANK,
                format!("{what}[{i}]={r} is not a rank of the group (size {n})"),
            ));
        }
        if std::mem::replace(&mut seen[r as usize], true) {
            return Err(err(MPI_ERR_RANK, format!("{what}[{i}]={r} appears twice")));
        }
    }
    Ok(())
}

pub fn incl(g: &Group, ranks: &[i32]) -> MpiResult<Group> {
    check_ranks(ranks, g.size(), "ranks")?;
    Ok(Group {
        ranks: ranks.iter().map(|&r| g.ranks[r as usize]).collect(),
    })
}

pub fn excl(g: &Group, ranks: &[i32]) -> MpiResult<Group> {
    check_ranks(ranks, g.size(), "ranks")?;
    let drop: std::collections::HashSet<i32> = ranks.iter().copied().collect();
    Ok(Group {
        ranks: g
            .ranks
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(&(*i as i32)))
            .map(|(_, &w)| w)
            .collect(),
    })
}

/// Expands (first, last, stride) triplets into ranks.
pub fn expand_ranges(g: &Group, ranges: &[[i32; 3]]) -> MpiResult<Vec<i32>> {
    let n = g.size() as i64;
    let mut out = Vec::new();
    for (i, &[first, last, stride]) in ranges.iter().enumerate() {
        if stride == 0 {
            return Err(err(MPI_ERR_ARG, format!("ranges[{i}] has stride 0")));
        }
        let (f, l, s) = (first as i64, last as i64, stride as i64);
        if f < 0 || f >= n || l < 0 || l >= n {
            return Err(err(MPI_ERR_RANK, format!("ranges[{i}]=({first},{last},{stride}) names ranks outside the group (size {n})")));
        }
        if (s > 0 && f > l) || (s < 0 && f < l) {
            continue; // empty range
        }
        let mut r = f;
        while (s > 0 && r <= l) || (s < 0 && r >= l) {
            out.push(r as i32);
            r += s;
        }
    }
    Ok(out)
}

pub fn union(a: &Group, b: &Group) -> Group {
    let mut ranks = a.ranks.clone();
    for &w in &b.ranks {
        if !a.ranks.contains(&w) {
            ranks.push(w);
        }
    }
    Group { ranks }
}

pub fn intersection(a: &Group, b: &Group) -> Group {
    Group {
        ranks: a
            .ranks
            .iter()
            .copied()
            .filter(|w| b.ranks.contains(w))
            .collect(),
    }
}

pub fn difference(a: &Group, b: &Group) -> Group {
    Group {
        ranks: a
            .ranks
            .iter()
            .copied()
            .filter(|w| !b.ranks.contains(w))
            .collect(),
    }
}

/// MPI_IDENT, MPI_SIMILAR or MPI_UNEQUAL.
pub fn compare(a: &Group, b: &Group) -> i32 {
    if a.ranks == b.ranks {
        MPI_IDENT
    } else {
        let mut x = a.ranks.clone();
        let mut y = b.ranks.clone();
        x.sort_unstable();
        y.sort_unstable();
        if x == y {
            MPI_SIMILAR
        } else {
            MPI_UNEQUAL
        }
    }
}

/// MPI_Group_translate_ranks: the ranks in `b` of ranks `r` of `a` (MPI_UNDEFINED for
/// those not in `b`; MPI_PROC_NULL stays itself).
pub fn translate(a: &Group, b: &Group, r: &[i32]) -> MpiResult<Vec<i32>> {
    r.iter()
        .enumerate()
        .map(|(i, &r)| {
            if r == MPI_PROC_NULL {
                Ok(MPI_PROC_NULL)
            } else if r < 0 || r as usize >= a.size() {
                Err(err(
                    MPI_ERR_RANK,
                    format!(
                        "ranks1[{i}]={r} is not a rank of group1 (size {})",
                        a.size()
                    ),
                ))
            } else {
                Ok(b.rank_of_world(a.ranks[r as usize])
                    .map_or(MPI_UNDEFINED, |x| x as i32))
            }
        })
        .collect()
}
