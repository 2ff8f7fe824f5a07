//! Per-launch counters: what the book teaches to look for.

use std::fmt;

/// Counters of one launch.
///
/// - A *warp instruction* is one instruction issued for the lanes of a warp at the same PC.
/// - A branch is *divergent* when some of those lanes take it and others do not.
/// - `barriers` counts completed block-wide barriers (`bar.sync`), summed over blocks.
/// - `cluster_barriers` counts completed cluster-wide barriers (`barrier.cluster.arrive` by every
///   thread of a cluster, that its `barrier.cluster.wait`s wait for), one per cluster and phase.
/// - Shared-memory `bank_conflicts` counts extra wavefronts: for each warp-level shared access,
///   the largest number of distinct 4-byte words any of the 32 banks must serve, minus the
///   unavoidable minimum (1, or more for 8- and 16-byte accesses that move over 128 bytes).
/// - `distributed_shared_accesses` counts warp-level loads and stores that reach the shared
///   memory of another CTA of the cluster (through `shared::cluster` or generic addresses that
///   `mapa` made); they are not shared accesses and have no bank conflicts counted. Lanes of such
///   an instruction that reach their own CTA's shared memory count as a shared access (so one
///   instruction whose lanes reach both counts in both).
/// - Global `requests` are warp-level loads and stores; `sectors` the distinct 32-byte sectors
///   they touch (4 per request is perfectly coalesced 4-byte access).
/// - `atomics` counts thread-level atomic operations (global and shared); `global_atomics` and
///   `shared_atomics` split them by where they land.
/// - Shared `atomic_conflicts` counts extra turns of shared-memory atomics: for each warp-level
///   shared atomic, the most lanes whose words lie in one of the 32 banks, minus 1. Unlike loads,
///   lanes on the same word are not merged: each read-modify-write takes its own turn, so 32 lanes
///   adding to one word cost 31 extra turns, and 32 lanes on 32 banks none.
/// - `strong_loads` counts warp-level loads marked `.relaxed`, `.acquire` or `.volatile` (any
///   space): reads of what other blocks publish, such as a look-back's status words.
/// - `blocks` counts the blocks run, and `longest_block` the warp instructions of the longest one:
///   the launch's span, were every block to run at once. `longest_warp` is the most warp
///   instructions one warp issued (in any block): a warp issues in order, so it is the length of
///   the longest chain of instructions, what a block cannot finish sooner than.
///
/// The [`fmt::Display`] form shows the first ten counters (the chapters' snapshots print it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchStats {
    pub warp_instructions: u64,
    /// Sum over warp instructions of the lanes at that instruction.
    pub active_lanes: u64,
    pub branches: u64,
    pub divergent_branches: u64,
    pub barriers: u64,
    pub cluster_barriers: u64,
    pub shared_accesses: u64,
    pub distributed_shared_accesses: u64,
    pub shared_bank_conflicts: u64,
    pub global_requests: u64,
    pub global_sectors: u64,
    pub atomics: u64,
    pub global_atomics: u64,
    pub shared_atomics: u64,
    pub shared_atomic_conflicts: u64,
    pub strong_loads: u64,
    pub blocks: u64,
    pub longest_block: u64,
    pub longest_warp: u64,
}

impl LaunchStats {
    /// Average lanes per warp instruction (32 is a fully converged warp).
    pub fn average_active_lanes(&self) -> f64 {
        if self.warp_instructions == 0 {
            0.0
        } else {
            self.active_lanes as f64 / self.warp_instructions as f64
        }
    }

    /// Average 32-byte sectors per global request.
    pub fn sectors_per_request(&self) -> f64 {
        if self.global_requests == 0 {
            0.0
        } else {
            self.global_sectors as f64 / self.global_requests as f64
        }
    }

    /// Adds the counters of `other`, a launch that ran after this one: every count is summed, and
    /// so are `longest_block` and `longest_warp`, spans of launches that run one after another.
    pub fn add(&mut self, other: &LaunchStats) {
        let LaunchStats {
            warp_instructions,
            active_lanes,
            branches,
            divergent_branches,
            barriers,
            cluster_barriers,
            shared_accesses,
            distributed_shared_accesses,
            shared_bank_conflicts,
            global_requests,
            global_sectors,
            atomics,
            global_atomics,
            shared_atomics,
            shared_atomic_conflicts,
            strong_loads,
            blocks,
            longest_block,
            longest_warp,
        } = other;
        self.warp_instructions += warp_instructions;
        self.active_lanes += active_lanes;
        self.branches += branches;
        self.divergent_branches += divergent_branches;
        self.barriers += barriers;
        self.cluster_barriers += cluster_barriers;
        self.shared_accesses += shared_accesses;
        self.distributed_shared_accesses += distributed_shared_accesses;
        self.shared_bank_conflicts += shared_bank_conflicts;
        self.global_requests += global_requests;
        self.global_sectors += global_sectors;
        self.atomics += atomics;
        self.global_atomics += global_atomics;
        self.shared_atomics += shared_atomics;
        self.strong_loads += strong_loads;
        self.shared_atomic_conflicts += shared_atomic_conflicts;
        self.blocks += blocks;
        self.longest_block += longest_block;
        self.longest_warp += longest_warp;
    }
}

impl fmt::Display for LaunchStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "warp instructions:      {}", self.warp_instructions)?;
        writeln!(f, "average active lanes:   {:.2}", self.average_active_lanes())?;
        writeln!(f, "branches:               {}", self.branches)?;
        writeln!(f, "divergent branches:     {}", self.divergent_branches)?;
        writeln!(f, "barriers:               {}", self.barriers)?;
        writeln!(f, "shared accesses:        {}", self.shared_accesses)?;
        writeln!(f, "shared bank conflicts:  {}", self.shared_bank_conflicts)?;
        writeln!(f, "global requests:        {}", self.global_requests)?;
        writeln!(f, "global sectors:         {}", self.global_sectors)?;
        writeln!(f, "sectors per request:    {:.2}", self.sectors_per_request())?;
        writeln!(f, "atomics:                {}", self.atomics)?;
        // A cluster's counters, for kernels that use clusters only (the others' text is as it was).
        if self.cluster_barriers > 0 || self.distributed_shared_accesses > 0 {
            writeln!(f, "cluster barriers:       {}", self.cluster_barriers)?;
            writeln!(f, "distributed shared:     {}", self.distributed_shared_accesses)?;
        }
        Ok(())
    }
}

/// The distinct `2^unit_bits`-byte blocks that `accesses` touch, sorted, in `units` (reused
/// scratch).
fn distinct_units(accesses: &[(u64, u32)], unit_bits: u32, units: &mut Vec<u64>) {
    units.clear();
    for &(addr, size) in accesses {
        let (first, last) = (addr >> unit_bits, (addr + size.max(1) as u64 - 1) >> unit_bits);
        if first == last {
            units.push(first);
        } else {
            units.extend(first..=last);
        }
    }
    if !units.is_sorted() {
        units.sort_unstable();
    }
    units.dedup();
}

/// The bytes `[start, end)` that `accesses` cover when each starts where the one before ended
/// (unit-stride access, the common case), or `None`.
fn contiguous_span(accesses: &[(u64, u32)]) -> Option<(u64, u64)> {
    let (&(start, size), rest) = accesses.split_first()?;
    let mut end = start + size.max(1) as u64;
    for &(addr, size) in rest {
        if addr != end {
            return None;
        }
        end += size.max(1) as u64;
    }
    Some((start, end))
}

/// Extra wavefronts of one warp-level shared access: `(byte offset, size)` per lane. `scratch` is
/// working space, so counting allocates nothing once it has grown.
pub(crate) fn bank_conflicts(accesses: &[(u64, u32)], scratch: &mut Vec<u64>) -> u64 {
    if contiguous_span(accesses).is_some() {
        // Consecutive words: every bank serves ceil(words / 32) of them, the minimum.
        return 0;
    }
    if let Some(extra) = strided_word_conflicts(accesses) {
        return extra;
    }
    distinct_units(accesses, 2, scratch);
    if scratch.is_empty() {
        return 0;
    }
    let mut per_bank = [0u64; 32];
    for w in scratch.iter() {
        per_bank[(w & 31) as usize] += 1;
    }
    let worst = per_bank.iter().copied().max().unwrap_or(0);
    let minimum = (scratch.len() as u64).div_ceil(32).max(1);
    worst.saturating_sub(minimum)
}

/// Extra wavefronts of 4-byte accesses to the words `w0 + i * k` (`k` > 0 words apart, in lane
/// order: the shared accesses of an interleaved tree such as `reduce_naive`), in closed form;
/// `None` for any other pattern. The banks `(w0 + i * k) mod 32` repeat every `32 / gcd(k, 32)`
/// lanes, so the busiest bank serves `ceil(n / period)` of the `n` distinct words, where `ceil(n /
/// 32)` is the least any access of `n` words needs.
fn strided_word_conflicts(accesses: &[(u64, u32)]) -> Option<u64> {
    let [(first, 4), (second, 4), ..] = *accesses else { return None };
    let stride = second.checked_sub(first).filter(|&d| d > 0 && d % 4 == 0 && first % 4 == 0)?;
    let mut expected = first;
    for &(addr, size) in accesses {
        if addr != expected || size != 4 {
            return None;
        }
        expected += stride;
    }
    let words_apart = stride / 4;
    let period = 32 / (1u64 << words_apart.trailing_zeros().min(5));
    let n = accesses.len() as u64;
    Some(n.div_ceil(period) - n.div_ceil(32))
}

/// Extra turns of one warp-level shared atomic: the byte offset of each lane's word. Every lane
/// takes its own turn at its bank, even on a word another lane updates too.
pub(crate) fn shared_atomic_conflicts(offsets: &[u64]) -> u64 {
    let mut per_bank = [0u64; 32];
    for &offset in offsets {
        per_bank[((offset >> 2) & 31) as usize] += 1;
    }
    per_bank.iter().copied().max().unwrap_or(0).saturating_sub(1)
}

/// Distinct 32-byte sectors touched by one warp-level global access (`scratch` as above).
pub(crate) fn sectors(accesses: &[(u64, u32)], scratch: &mut Vec<u64>) -> u64 {
    if let Some((start, end)) = contiguous_span(accesses) {
        return (end - 1) / 32 - start / 32 + 1;
    }
    distinct_units(accesses, 5, scratch);
    scratch.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_words_have_no_conflicts_and_strides_do() {
        let s = &mut Vec::new();
        let unit: Vec<(u64, u32)> = (0..32).map(|i| (i * 4, 4)).collect();
        assert_eq!(bank_conflicts(&unit, s), 0);
        let stride2: Vec<(u64, u32)> = (0..32).map(|i| (i * 8, 4)).collect();
        assert_eq!(bank_conflicts(&stride2, s), 1);
        let broadcast: Vec<(u64, u32)> = (0..32).map(|_| (0, 4)).collect();
        assert_eq!(bank_conflicts(&broadcast, s), 0);
        let vec4: Vec<(u64, u32)> = (0..32).map(|i| (i * 16, 16)).collect();
        assert_eq!(bank_conflicts(&vec4, s), 0);
        assert_eq!(sectors(&unit, s), 4);
        let reversed: Vec<(u64, u32)> = (0..32).rev().map(|i| (i * 64, 4)).collect();
        assert_eq!(sectors(&reversed, s), 32);
        assert_eq!(bank_conflicts(&reversed, s), 15);
        // Unit stride, but not from sector or bank 0: the contiguous shortcut agrees with counting.
        let shifted: Vec<(u64, u32)> = (0..32).map(|i| (20 + i * 8, 8)).collect();
        assert_eq!(sectors(&shifted, s), 9);
        assert_eq!(bank_conflicts(&shifted, s), 0);
        // The closed form for evenly spaced words agrees with counting them, at every stride and
        // number of lanes (an interleaved tree's active lanes are evenly spaced and fewer than 32).
        for words_apart in 1..=80u64 {
            for lanes in 2..=32u64 {
                for first_word in [0u64, 3, 31] {
                    let spaced: Vec<(u64, u32)> =
                        (0..lanes).map(|i| ((first_word + i * words_apart) * 4, 4)).collect();
                    let closed = strided_word_conflicts(&spaced).expect("evenly spaced words");
                    distinct_units(&spaced, 2, s);
                    let mut per_bank = [0u64; 32];
                    s.iter().for_each(|w| per_bank[(w & 31) as usize] += 1);
                    let counted = per_bank.iter().max().unwrap() - (s.len() as u64).div_ceil(32);
                    assert_eq!(
                        closed, counted,
                        "{lanes} lanes {words_apart} words apart from word {first_word}"
                    );
                }
            }
        }
        let bytes: Vec<(u64, u32)> = (0..32).map(|i| (100 + i, 1)).collect();
        assert_eq!(sectors(&bytes, s), 2);
        assert_eq!(bank_conflicts(&bytes, s), 0);
    }

    #[test]
    fn shared_atomics_take_a_turn_per_lane_in_a_bank() {
        // 32 lanes on one word: 32 turns, 31 extra (a load of one word would be a broadcast).
        assert_eq!(shared_atomic_conflicts(&[64; 32]), 31);
        // Lane copies: lane l's word in bank l, 32 words apart per bin: one turn.
        let lane_copies: Vec<u64> = (0..32).map(|l| (7 * 32 + l) * 4).collect();
        assert_eq!(shared_atomic_conflicts(&lane_copies), 0);
        // A copy per lane, 256 words each: bank = bin % 32 for every lane, all on one bank.
        let per_lane_blocks: Vec<u64> = (0..32).map(|l| (l * 256 + 5) * 4).collect();
        assert_eq!(shared_atomic_conflicts(&per_lane_blocks), 31);
        // Two lanes per bank (words 0..16 and 32..48), and a lone lane: one extra turn.
        let pairs: Vec<u64> = (0..16).chain(32..48).map(|w| w * 4).collect();
        assert_eq!(shared_atomic_conflicts(&pairs), 1);
        assert_eq!(shared_atomic_conflicts(&[12]), 0);
        assert_eq!(shared_atomic_conflicts(&[]), 0);
    }

    #[test]
    fn added_launches_sum_every_counter() {
        let one = LaunchStats {
            warp_instructions: 10,
            active_lanes: 320,
            branches: 2,
            divergent_branches: 1,
            barriers: 3,
            cluster_barriers: 2,
            shared_accesses: 4,
            distributed_shared_accesses: 3,
            shared_bank_conflicts: 5,
            global_requests: 6,
            global_sectors: 24,
            atomics: 7,
            global_atomics: 3,
            shared_atomics: 4,
            shared_atomic_conflicts: 8,
            strong_loads: 5,
            blocks: 2,
            longest_block: 6,
            longest_warp: 3,
        };
        let mut two = one.clone();
        two.add(&one);
        assert_eq!(two.warp_instructions, 20);
        assert_eq!(
            (two.longest_block, two.longest_warp),
            (12, 6),
            "launches one after another: their spans add"
        );
        assert_eq!(
            (two.global_atomics, two.shared_atomics, two.shared_atomic_conflicts, two.blocks),
            (6, 8, 16, 4)
        );
        assert_eq!(two.strong_loads, 10);
        assert_eq!((two.cluster_barriers, two.distributed_shared_accesses), (4, 6));
        assert_eq!(two.sectors_per_request(), one.sectors_per_request());
        let mut zero = LaunchStats::default();
        zero.add(&one);
        assert_eq!(zero, one);
    }
}
