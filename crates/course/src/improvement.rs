//! What a step's technique improves: the simulator counters named by a step's `improves` in
//! `course.toml`, what each is divided by, and their values over one run of a step. The classroom
//! (crate `classroom`) scores a student's counts of them against the reference solution's.

use std::fmt;

use gpu_harness::{LaunchCounters, Transfers};
use serde::{Deserialize, Serialize};

/// A simulator counter a technique improves (its name in `course.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
pub enum Counter {
    /// Warp instructions executed.
    #[serde(rename = "warp instructions")]
    WarpInstructions,
    /// Warp-level branches executed (loop back-edges, tests that are not predicated away).
    #[serde(rename = "branches")]
    Branches,
    /// Branches that split a warp.
    #[serde(rename = "divergent branches")]
    DivergentBranches,
    /// Block-wide barriers completed (`__syncthreads`; `__syncwarp` is not one).
    #[serde(rename = "barriers")]
    Barriers,
    /// Warp-level shared-memory loads and stores.
    #[serde(rename = "shared accesses")]
    SharedAccesses,
    /// Extra shared-memory wavefronts from bank conflicts (loads and stores).
    #[serde(rename = "bank conflicts")]
    BankConflicts,
    /// Warp-level global loads and stores.
    #[serde(rename = "global requests")]
    GlobalRequests,
    /// 32-byte sectors per global request (4 is coalesced 4-byte access): a ratio of two counts.
    #[serde(rename = "sectors per request")]
    SectorsPerRequest,
    /// Thread-level atomics on global memory.
    #[serde(rename = "global atomics")]
    GlobalAtomics,
    /// Thread-level atomics on shared memory.
    #[serde(rename = "shared atomics")]
    SharedAtomics,
    /// Extra turns of shared atomics: lanes of a warp whose words share a bank.
    #[serde(rename = "shared atomic conflicts")]
    SharedAtomicConflicts,
    /// Warp-level loads marked `.relaxed`, `.acquire` or `.volatile`: reads of what other blocks
    /// publish (a look-back's status words).
    #[serde(rename = "strong loads")]
    StrongLoads,
    /// Blocks launched.
    #[serde(rename = "blocks")]
    Blocks,
    /// Kernel launches.
    #[serde(rename = "launches")]
    Launches,
    /// Warp instructions of each launch's longest block, summed over the launches: the step's span
    /// were every block of a launch to run at once.
    #[serde(rename = "longest block")]
    LongestBlock,
    /// Warp instructions of each launch's busiest warp, summed over the launches: the longest
    /// chain of instructions issued in order, which no block finishes sooner than.
    #[serde(rename = "longest warp")]
    LongestWarp,
    /// Of a step on several simulated devices: the latest end of a copy between them on the
    /// simulator's model (one tick per byte on the stream it is queued on, links never shared), the
    /// bytes of the longest chain of copies that wait for each other.
    #[serde(rename = "copy span")]
    CopySpan,
    /// Of a step on several simulated devices: the bytes copied into the device that receives the
    /// most from the others.
    #[serde(rename = "bytes into the busiest device")]
    BusiestDeviceBytes,
}

impl Counter {
    /// Every counter, in the order tables list them.
    pub const ALL: [Counter; 18] = [
        Counter::WarpInstructions,
        Counter::Branches,
        Counter::DivergentBranches,
        Counter::Barriers,
        Counter::SharedAccesses,
        Counter::BankConflicts,
        Counter::GlobalRequests,
        Counter::SectorsPerRequest,
        Counter::GlobalAtomics,
        Counter::SharedAtomics,
        Counter::SharedAtomicConflicts,
        Counter::StrongLoads,
        Counter::Blocks,
        Counter::Launches,
        Counter::LongestBlock,
        Counter::LongestWarp,
        Counter::CopySpan,
        Counter::BusiestDeviceBytes,
    ];

    /// Its name in `course.toml` and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Counter::WarpInstructions => "warp instructions",
            Counter::Branches => "branches",
            Counter::DivergentBranches => "divergent branches",
            Counter::Barriers => "barriers",
            Counter::SharedAccesses => "shared accesses",
            Counter::BankConflicts => "bank conflicts",
            Counter::GlobalRequests => "global requests",
            Counter::SectorsPerRequest => "sectors per request",
            Counter::GlobalAtomics => "global atomics",
            Counter::SharedAtomics => "shared atomics",
            Counter::SharedAtomicConflicts => "shared atomic conflicts",
            Counter::StrongLoads => "strong loads",
            Counter::Blocks => "blocks",
            Counter::Launches => "launches",
            Counter::LongestBlock => "longest block",
            Counter::LongestWarp => "longest warp",
            Counter::CopySpan => "copy span",
            Counter::BusiestDeviceBytes => "bytes into the busiest device",
        }
    }

    /// Whether it is a ratio of two counts already (and so takes no `per`).
    pub fn is_ratio(self) -> bool {
        self == Counter::SectorsPerRequest
    }

    /// Its value over a whole run of a step: the counters of its launches added up.
    pub fn total(self, run: &RunCounters) -> f64 {
        let c = &run.counters;
        let count = match self {
            Counter::WarpInstructions => c.warp_instructions,
            Counter::Branches => c.branches,
            Counter::DivergentBranches => c.divergent_branches,
            Counter::Barriers => c.barriers,
            Counter::SharedAccesses => c.shared_accesses,
            Counter::BankConflicts => c.shared_bank_conflicts,
            Counter::GlobalRequests => c.global_requests,
            Counter::SectorsPerRequest => return c.sectors_per_request(),
            Counter::GlobalAtomics => c.global_atomics,
            Counter::SharedAtomics => c.shared_atomics,
            Counter::SharedAtomicConflicts => c.shared_atomic_conflicts,
            Counter::StrongLoads => c.strong_loads,
            Counter::Blocks => c.blocks,
            Counter::Launches => run.launches,
            Counter::LongestBlock => c.longest_block,
            Counter::LongestWarp => c.longest_warp,
            Counter::CopySpan => run.transfers.iter().map(|t| t.finished_at).max().unwrap_or(0),
            Counter::BusiestDeviceBytes => {
                run.transfers.iter().map(|t| t.bytes_received).max().unwrap_or(0)
            }
        };
        count as f64
    }
}

/// What a counter is divided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Per {
    /// The elements of the input (a matrix: rows times columns).
    #[serde(rename = "element")]
    Element,
    /// The blocks the step launched.
    #[serde(rename = "block")]
    Block,
    /// The step's launches.
    #[serde(rename = "launch")]
    Launch,
    /// One run of the step (everything it queues for one result).
    #[serde(rename = "run")]
    Run,
}

impl Per {
    pub fn name(self) -> &'static str {
        match self {
            Per::Element => "element",
            Per::Block => "block",
            Per::Launch => "launch",
            Per::Run => "run",
        }
    }
}

/// One counter a step's technique improves, and what a count above the reference says.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Improvement {
    pub counter: Counter,
    /// What it is divided by; none for a ratio (`sectors per request`).
    pub per: Option<Per>,
    /// Only the launches of this kernel count (the one that holds the technique, in a step that
    /// launches several); by default, every launch of the step.
    pub kernel: Option<String>,
    /// Why a count above the reference's happens, in a student's terms ("the active threads are
    /// not contiguous").
    pub why: String,
}

impl Improvement {
    /// `divergent branches per block`, `sectors per request`, `global atomics per element in
    /// compact_scatter_flagged_masked_f32`: its name in tables and results.
    pub fn label(&self) -> String {
        let name = match self.per {
            Some(per) => format!("{} per {}", self.counter.name(), per.name()),
            None => self.counter.name().to_string(),
        };
        match &self.kernel {
            Some(kernel) => format!("{name} in {kernel}"),
            None => name,
        }
    }

    /// A ratio takes no `per`; every other counter needs one; `why` says something.
    pub fn validate(&self) -> Result<(), String> {
        match (self.counter.is_ratio(), self.per) {
            (true, Some(_)) => {
                return Err(format!("`{}` is a ratio already: no `per`", self.counter.name()));
            }
            (false, None) => {
                return Err(format!(
                    "`{}` needs `per` (element, block, launch or run)",
                    self.counter.name()
                ));
            }
            _ => {}
        }
        if self.why.trim().is_empty() {
            return Err(format!("`{}` needs a `why`", self.label()));
        }
        Ok(())
    }

    /// Its value over the launches of one run of a step on `elements` elements (those of its
    /// kernel, if it names one), and over the copies between devices of a step on several
    /// (`transfers`, one per device; none for a step on one).
    pub fn value_of(
        &self,
        elements: u64,
        launches: &[(String, LaunchCounters)],
        transfers: &[Transfers],
    ) -> f64 {
        let counted: Vec<(String, LaunchCounters)> = launches
            .iter()
            .filter(|(name, _)| self.kernel.as_ref().is_none_or(|k| k == name))
            .cloned()
            .collect();
        self.value(&RunCounters {
            transfers: transfers.to_vec(),
            ..RunCounters::of(elements, &counted)
        })
    }

    /// Its value over one run of a step.
    pub fn value(&self, run: &RunCounters) -> f64 {
        let total = self.counter.total(run);
        let per = match self.per {
            None | Some(Per::Run) => 1,
            Some(Per::Element) => run.elements,
            Some(Per::Block) => run.counters.blocks,
            Some(Per::Launch) => run.launches,
        };
        if per == 0 { total } else { total / per as f64 }
    }
}

/// What the simulator counted over one run of a step: its launches' counters added up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunCounters {
    /// The elements of the input it ran on.
    pub elements: u64,
    pub launches: u64,
    pub counters: LaunchCounters,
    /// A step on several simulated devices: each device's copies to and from the others, counted
    /// from a fresh world (so their model's clocks start at 0).
    pub transfers: Vec<Transfers>,
}

impl RunCounters {
    /// The counters of `launches` (as the device recorded them) over an input of `elements`.
    pub fn of(elements: u64, launches: &[(String, LaunchCounters)]) -> RunCounters {
        let mut counters = LaunchCounters::default();
        for (_, launch) in launches {
            counters.add(launch);
        }
        RunCounters { elements, launches: launches.len() as u64, counters, transfers: Vec::new() }
    }
}

impl fmt::Display for Improvement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn improvements_name_their_counter_and_divisor() {
        let divergence = Improvement {
            counter: Counter::DivergentBranches,
            per: Some(Per::Block),
            kernel: None,
            why: "the active threads are not contiguous".into(),
        };
        assert_eq!(divergence.label(), "divergent branches per block");
        assert!(divergence.validate().is_ok());
        let sectors = Improvement {
            counter: Counter::SectorsPerRequest,
            per: None,
            kernel: None,
            why: "strided".into(),
        };
        assert_eq!(sectors.label(), "sectors per request");
        let scatter = Improvement { kernel: Some("scatter".into()), ..sectors.clone() };
        assert_eq!(scatter.label(), "sectors per request in scatter");
        assert!(sectors.validate().is_ok());
        assert!(
            Improvement { per: Some(Per::Element), ..sectors.clone() }
                .validate()
                .unwrap_err()
                .contains("ratio")
        );
        assert!(
            Improvement { per: None, ..divergence.clone() }
                .validate()
                .unwrap_err()
                .contains("needs `per`")
        );
        assert!(Improvement { why: " ".into(), ..divergence }.validate().is_err());
        for counter in Counter::ALL {
            let text = format!("\"{}\"", counter.name());
            assert_eq!(serde_json::from_str::<Counter>(&text).unwrap(), counter, "{text}");
        }
    }

    #[test]
    fn values_are_divided_as_asked() {
        let counters = LaunchCounters {
            divergent_branches: 1536,
            blocks: 256,
            global_requests: 10,
            global_sectors: 45,
            shared_atomic_conflicts: 64,
            longest_block: 900,
            ..Default::default()
        };
        let run = RunCounters { elements: 1 << 16, launches: 2, counters, transfers: Vec::new() };
        let value =
            |counter, per| Improvement { counter, per, kernel: None, why: "x".into() }.value(&run);
        assert_eq!(value(Counter::DivergentBranches, Some(Per::Block)), 6.0);
        assert_eq!(value(Counter::SectorsPerRequest, None), 4.5);
        assert_eq!(value(Counter::SharedAtomicConflicts, Some(Per::Element)), 64.0 / 65536.0);
        assert_eq!(value(Counter::Launches, Some(Per::Run)), 2.0);
        assert_eq!(value(Counter::LongestBlock, Some(Per::Launch)), 450.0);
        // Only the named kernel's launches count.
        let first = LaunchCounters { global_atomics: 3, blocks: 1, ..Default::default() };
        let second = LaunchCounters { global_atomics: 5, ..first.clone() };
        let launches = [("a".to_string(), first), ("b".to_string(), second)];
        let atomics = |kernel: Option<&str>| {
            Improvement {
                counter: Counter::GlobalAtomics,
                per: Some(Per::Run),
                kernel: kernel.map(str::to_string),
                why: "x".into(),
            }
            .value_of(100, &launches, &[])
        };
        assert_eq!((atomics(None), atomics(Some("b")), atomics(Some("c"))), (8.0, 5.0, 0.0));
        // A step on several devices: its longest chain of copies and its busiest receiver.
        let transfers = [
            Transfers { copies_sent: 2, bytes_sent: 400, bytes_received: 100, finished_at: 300 },
            Transfers { copies_sent: 1, bytes_sent: 100, bytes_received: 400, finished_at: 500 },
        ];
        let world = |counter| {
            Improvement { counter, per: Some(Per::Element), kernel: None, why: "x".into() }
                .value_of(100, &launches, &transfers)
        };
        assert_eq!((world(Counter::CopySpan), world(Counter::BusiestDeviceBytes)), (5.0, 4.0));
    }
}
