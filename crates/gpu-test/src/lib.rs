//! The test kit: a harness that knows which tests need a GPU, seeded random inputs, and failures
//! whose messages carry the seed. A dev-dependency only: no technique library links it.
//!
//! Test files use `harness = false` and build a [`TestSuite`]:
//!
//! ```text
//! fn main() -> std::process::ExitCode {
//!     TestSuite::new()
//!         .cpu("launch_plan", || { /* no GPU needed */ Ok(()) })
//!         .gpu("partials", |device| { /* runs on the GPU */ Ok(()) })
//!         .run()
//! }
//! ```
//!
//! `gpu` tests run on [`Device::shared`]: the GPU when there is one, else the CPU simulator (which
//! needs NVRTC). With neither they are reported as `ignored (no CUDA GPU (...) and no CPU simulator
//! (...))`, never as passed; with `CUDA_REQUIRED=1` a missing GPU fails them instead. `nvrtc` tests
//! need only the NVRTC library (no GPU) and are ignored when it is missing, unless
//! `NVRTC_REQUIRED=1` or `CUDA_REQUIRED=1`.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

pub use libtest_mimic::Failed;
use libtest_mimic::{Arguments, Completion, Trial};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use gpu_harness::{Device, GpuError};

/// Property tests (proptest) on the GPU or the simulator: the runner, shared input strategies and
/// guarded buffers.
#[cfg(feature = "proptest")]
pub mod props;

/// The name prefix of a test that illustrates a lesson rather than grading a kernel: snapshots of
/// launch plans, of one solution's intermediate values and of the simulator's counters. A correct
/// kernel written differently (another block size, another order of additions) changes them, so
/// `cargo course grade` skips them; `cargo test` runs them like any other test.
pub const ILLUSTRATION: &str = "illustration::";

/// What a test returns: `Ok(())`, or a failure with a message (`?` works on [`GpuError`]).
pub type TestResult = Result<(), Failed>;

/// True when the environment variable is set to `1`.
fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

/// A list of tests, run like `cargo test` runs `#[test]` functions (same flags and output).
#[derive(Default)]
pub struct TestSuite {
    trials: Vec<Trial>,
}

impl TestSuite {
    pub fn new() -> Self {
        Self::default()
    }

    /// A test that needs neither a GPU nor NVRTC.
    pub fn cpu(
        mut self,
        name: impl Into<String>,
        test: impl FnOnce() -> TestResult + Send + 'static,
    ) -> Self {
        self.trials.push(Trial::test(name, test));
        self
    }

    /// A test that needs neither a GPU nor NVRTC and runs only where `requirement` returns `None`
    /// (a tool it runs is installed); elsewhere it is reported as ignored with the reason it
    /// returns.
    pub fn cpu_if(
        mut self,
        name: impl Into<String>,
        requirement: impl FnOnce() -> Option<String> + Send + 'static,
        test: impl FnOnce() -> TestResult + Send + 'static,
    ) -> Self {
        self.trials.push(Trial::ignorable_test(name, move || match requirement() {
            None => test().map(|()| Completion::Completed),
            Some(reason) => Ok(Completion::ignored_with(reason)),
        }));
        self
    }

    /// A test that compiles kernels with NVRTC but needs no GPU.
    pub fn nvrtc(
        mut self,
        name: impl Into<String>,
        test: impl FnOnce() -> TestResult + Send + 'static,
    ) -> Self {
        self.trials.push(Trial::ignorable_test(
            name,
            move || match gpu_harness::compile::load_nvrtc() {
                Ok(()) => test().map(|()| Completion::Completed),
                Err(e) if env_flag("NVRTC_REQUIRED") || env_flag("CUDA_REQUIRED") => {
                    Err(format!("NVRTC is required here but unavailable: {e}").into())
                }
                Err(e) => Ok(Completion::ignored_with(format!("no NVRTC: {e}"))),
            },
        ));
        self
    }

    /// A test that needs NVRTC and runs only where `requirement` returns `None`; elsewhere it is
    /// reported as ignored with the reason it returns.
    pub fn nvrtc_if(
        mut self,
        name: impl Into<String>,
        requirement: impl FnOnce() -> Option<String> + Send + 'static,
        test: impl FnOnce() -> TestResult + Send + 'static,
    ) -> Self {
        self.trials.push(Trial::ignorable_test(
            name,
            move || match gpu_harness::compile::load_nvrtc() {
                Ok(()) => match requirement() {
                    None => test().map(|()| Completion::Completed),
                    Some(reason) => Ok(Completion::ignored_with(reason)),
                },
                Err(e) if env_flag("NVRTC_REQUIRED") || env_flag("CUDA_REQUIRED") => {
                    Err(format!("NVRTC is required here but unavailable: {e}").into())
                }
                Err(e) => Ok(Completion::ignored_with(format!("no NVRTC: {e}"))),
            },
        ));
        self
    }

    /// A test that runs kernels on the GPU.
    pub fn gpu(
        mut self,
        name: impl Into<String>,
        test: impl FnOnce(&Device) -> TestResult + Send + 'static,
    ) -> Self {
        self.trials.push(Trial::ignorable_test(name, move || match Device::shared() {
            Ok(device) => test(&device).map(|()| Completion::Completed),
            Err(e) if env_flag("CUDA_REQUIRED") || !e.is_unavailable() => {
                Err(format!("CUDA_REQUIRED=1 but the GPU is unavailable: {e}").into())
            }
            Err(e) => Ok(Completion::ignored_with(first_line(&e))),
        }));
        self
    }

    /// A GPU test that runs only where `requirement` returns `None`; elsewhere it is reported as
    /// ignored with the reason it returns (too little memory, say).
    pub fn gpu_if(
        mut self,
        name: impl Into<String>,
        requirement: impl FnOnce(&Device) -> Option<String> + Send + 'static,
        test: impl FnOnce(&Device) -> TestResult + Send + 'static,
    ) -> Self {
        self.trials.push(Trial::ignorable_test(name, move || match Device::shared() {
            Ok(device) => match requirement(&device) {
                None => test(&device).map(|()| Completion::Completed),
                Some(reason) => Ok(Completion::ignored_with(reason)),
            },
            Err(e) if env_flag("CUDA_REQUIRED") || !e.is_unavailable() => {
                Err(format!("CUDA_REQUIRED=1 but the GPU is unavailable: {e}").into())
            }
            Err(e) => Ok(Completion::ignored_with(first_line(&e))),
        }));
        self
    }

    /// Runs the tests selected by the command line and returns the process exit code.
    pub fn run(self) -> ExitCode {
        libtest_mimic::run(&Arguments::from_args(), self.trials).exit_code()
    }
}

fn first_line(e: &GpuError) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// A seeded random generator for test inputs. The seed comes from `TEST_SEED` when set, else from
/// the clock, so every run draws fresh inputs and a failure can be replayed: [`TestRng::fail`]
/// puts the seed in the message.
pub struct TestRng {
    rng: SmallRng,
    seed: u64,
}

impl Default for TestRng {
    fn default() -> Self {
        Self::new()
    }
}

impl TestRng {
    pub fn new() -> Self {
        let seed =
            std::env::var("TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
                let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
                now.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32)
            });
        Self::with_seed(seed)
    }

    pub fn with_seed(seed: u64) -> Self {
        TestRng { rng: SmallRng::seed_from_u64(seed), seed }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The generator itself, for inputs the helpers below do not make.
    pub fn rng(&mut self) -> &mut SmallRng {
        &mut self.rng
    }

    /// `n` floats drawn uniformly from `[low, high)`.
    pub fn uniform_f32(&mut self, n: usize, low: f32, high: f32) -> Vec<f32> {
        (0..n).map(|_| self.rng.random_range(low..high)).collect()
    }

    /// `n` integer-valued floats in `[-max_abs, max_abs]`. Their sums are exact in f32 while
    /// `n * max_abs < 2^24`, so a reduction of them must match the reference bit for bit.
    pub fn small_integers_f32(&mut self, n: usize, max_abs: i32) -> Vec<f32> {
        (0..n).map(|_| self.rng.random_range(-max_abs..=max_abs) as f32).collect()
    }

    /// `n` random 32-bit patterns (for integer inputs over their full range).
    pub fn random_bits(&mut self, n: usize) -> Vec<u32> {
        (0..n).map(|_| self.rng.random::<u32>()).collect()
    }

    /// A size drawn uniformly from `range`.
    pub fn size_in(&mut self, range: std::ops::RangeInclusive<usize>) -> usize {
        self.rng.random_range(range)
    }

    /// A test failure whose message ends with the seed and how to replay it.
    pub fn fail(&self, message: impl std::fmt::Display) -> Failed {
        format!("{message}\n(seed {0}; replay with TEST_SEED={0})", self.seed).into()
    }
}

/// Runs `body(k)` for k in `0..threads`, each on its own thread and all at once (how the tests
/// check that several threads can share one device), and waits for every one. Fails with every
/// thread's failure, a panic counting as one.
pub fn on_threads(threads: usize, body: impl Fn(usize) -> TestResult + Sync) -> TestResult {
    let failures: Vec<String> = std::thread::scope(|scope| {
        let body = &body;
        let running: Vec<_> = (0..threads).map(|k| scope.spawn(move || body(k))).collect();
        running
            .into_iter()
            .enumerate()
            .filter_map(|(k, thread)| match thread.join() {
                Ok(Ok(())) => None,
                Ok(Err(failed)) => {
                    Some(format!("thread {k}: {}", failed.message().unwrap_or("failed")))
                }
                Err(_) => Some(format!("thread {k} panicked")),
            })
            .collect()
    });
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n").into()) }
}

/// A type's name without module paths, for test names: `HostFinishedSum<Interleaved>`.
pub fn short_type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let mut short = String::with_capacity(full.len());
    let mut word = String::new();
    for c in full.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            short.push_str(word.rsplit("::").next().unwrap_or_default());
            word.clear();
            short.push(c);
        }
    }
    short.push_str(word.rsplit("::").next().unwrap_or_default());
    short.replace(' ', "")
}

/// The NVRTC the simulator's counter snapshots were recorded with. Another NVRTC emits other PTX,
/// so other counts: CI installs this version (`.ci/run`), and elsewhere those tests are ignored.
pub const COUNTERS_NVRTC: (u32, u32) = (13, 5);

/// `None` when this NVRTC is [`COUNTERS_NVRTC`] and no `GPU_PROFILE` is set, else why counter
/// snapshots cannot be compared.
pub fn counters_comparable() -> Option<String> {
    match gpu_harness::GpuProfile::from_env() {
        Ok(Some(profile)) => {
            return Some(format!(
                "counter snapshots were recorded for the simulator's own compute_90 and shape; \
                 GPU_PROFILE={} compiles other PTX and plans for another shape",
                profile.name
            ));
        }
        Err(e) => return Some(e.to_string()),
        Ok(None) => {}
    }
    match gpu_harness::compile::nvrtc_version() {
        Ok(version) if version == COUNTERS_NVRTC => None,
        Ok((major, minor)) => Some(format!(
            "counter snapshots were recorded with NVRTC {}.{}; this is NVRTC {major}.{minor}, \
             whose PTX differs",
            COUNTERS_NVRTC.0, COUNTERS_NVRTC.1
        )),
        Err(e) => Some(e.to_string()),
    }
}

/// The largest input the test suites give the CPU simulator: it executes about twenty million warp
/// instructions per second, so every reduction test input up to 2^24 elements runs there; larger
/// cases (which run on every GPU) are reported as ignored there, with the reason.
pub const SIMULATOR_MAX_ELEMENTS: usize = 1 << 24;

/// `None` when `device` runs an input of `n` elements in test time (always, on a GPU); otherwise
/// the reason to skip it.
pub fn fits_test_time(device: &Device, n: usize) -> Option<String> {
    (device.is_simulated() && n > SIMULATOR_MAX_ELEMENTS).then(|| {
        format!(
            "{n} elements is too many for the CPU simulator in a test (at most \
                          {SIMULATOR_MAX_ELEMENTS})"
        )
    })
}

/// The device a test that counts launches ([`Device::take_launches`]) should launch on: on the
/// simulator a device of its own, since the tests running beside it launch on the shared one and
/// their launches would be counted too; on a GPU (which records none) the shared device.
pub fn counting_device(device: &Device) -> gpu_harness::Result<Device> {
    if device.is_simulated() { Device::simulator() } else { Ok(device.clone()) }
}

/// `on_gpu` elements on a GPU, `on_simulator` on the CPU simulator.
pub fn test_size(device: &Device, on_gpu: usize, on_simulator: usize) -> usize {
    if device.is_simulated() { on_simulator } else { on_gpu }
}

/// `None` when the device has at least `bytes` of memory, else the reason to skip.
pub fn enough_memory(device: &Device, bytes: u64) -> Option<String> {
    let have = device.facts().memory_bytes;
    (have < bytes).then(|| {
        format!(
            "needs {} GiB of device memory, {} has {}",
            bytes >> 30,
            device.facts().name,
            have >> 30
        )
    })
}

/// Why a test of `n` elements whose buffers take `bytes` of device memory cannot run here (the
/// skip reason of the tests of more than 2^32 elements), or `None`: too many elements for the
/// simulator ([`fits_test_time`]), or less device memory than `bytes` and 2 GiB to spare
/// ([`enough_memory`]).
pub fn too_large_here(device: &Device, n: usize, bytes: u64) -> Option<String> {
    fits_test_time(device, n).or_else(|| enough_memory(device, bytes + (2 << 30)))
}

/// [`too_large_here`] for a test that runs on each matrix of `shapes` (rows, columns) in turn,
/// holding `bytes_per_element` of device memory for each element of the largest (its input and
/// output together).
pub fn matrices_too_large_here(
    device: &Device,
    shapes: &[(usize, usize)],
    bytes_per_element: u64,
) -> Option<String> {
    let n = shapes.iter().map(|&(rows, cols)| rows * cols).max().unwrap_or(0);
    too_large_here(device, n, bytes_per_element * n as u64)
}

/// `n` values, value `i` made by `make(i)`, built on every core: the inputs of the tests of more
/// than 2^32 elements, which one core would take minutes to make.
pub fn by_index<T: Copy + Default + Send>(n: usize, make: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut values = vec![T::default(); n];
    let per_core = n.div_ceil(std::thread::available_parallelism().map_or(1, |c| c.get())).max(1);
    std::thread::scope(|scope| {
        for (k, part) in values.chunks_mut(per_core).enumerate() {
            let make = &make;
            scope.spawn(move || {
                part.iter_mut().enumerate().for_each(|(j, v)| *v = make(k * per_core + j))
            });
        }
    });
    values
}

/// The rows of a `rows x cols` matrix of more than 2^32 elements that its tests check: the first
/// three, the last three, and those around element offsets 2^31 and 2^32, where an offset held in
/// a 32-bit integer (signed or not) wraps.
pub fn rows_past_32_bits(rows: usize, cols: usize) -> Vec<usize> {
    let mut picked =
        vec![0, 1, 2, rows.saturating_sub(3), rows.saturating_sub(2), rows.saturating_sub(1)];
    for row in [(1usize << 31) / cols.max(1), (1usize << 32) / cols.max(1)] {
        picked.extend([row.saturating_sub(1), row, row + 1]);
    }
    picked.retain(|&r| r < rows);
    picked.sort_unstable();
    picked.dedup();
    picked
}

/// Formats numbers as rows of `per_row` for readable snapshots.
pub fn rows<T: std::fmt::Display>(values: &[T], per_row: usize) -> String {
    values
        .chunks(per_row.max(1))
        .map(|row| row.iter().map(|v| format!("{v:>8}")).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_type_names_drop_module_paths() {
        assert_eq!(short_type_name::<Vec<std::string::String>>(), "Vec<String>");
        assert_eq!(short_type_name::<(u32, f32)>(), "(u32,f32)");
    }

    #[test]
    fn failures_carry_the_seed() {
        let rng = TestRng::with_seed(42);
        assert!(rng.fail("boom").message().is_some_and(|m| m.contains("TEST_SEED=42")));
    }

    #[test]
    fn every_thread_runs_and_every_failure_is_reported() {
        let ran = std::sync::atomic::AtomicUsize::new(0);
        assert!(
            on_threads(3, |_| Ok(ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst))
                .map(|_| ()))
            .is_ok()
        );
        assert_eq!(ran.into_inner(), 3);
        let failed = on_threads(4, |k| match k {
            1 => Err("wrong answer".into()),
            3 => panic!("a thread's panic"),
            _ => Ok(()),
        })
        .expect_err("two threads failed");
        assert_eq!(failed.message(), Some("thread 1: wrong answer\nthread 3 panicked"));
    }
}
