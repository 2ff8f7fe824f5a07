//! The steps as the tour and the benches measure them (`pub fn steps() -> Vec<StepEntry>`): each
//! transposes (or, step 1, copies) a random f32 matrix of the case's shape, and its check compares
//! every element with the input, bit for bit. The registry (`course.toml`) says at which shapes.

use std::sync::{Arc, Mutex};

use gpu_harness::{Case, Checked, Device, DeviceBuffer, Prepared, Result, StepEntry};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::{Step, TileCopy, Transposer, first_mismatch};

/// The crate the registry names for these steps and the peer.
pub(crate) const CRATE: &str = env!("CARGO_PKG_NAME");

/// A word no correct transpose writes into a random input's output (a NaN with a payload the
/// uniform inputs never have): outputs are filled with it before a checked run.
pub const POISON: u32 = 0x7fc0_dead;

/// Every step and the peer, in the registry's order.
pub fn steps() -> Vec<StepEntry> {
    let mut entries = vec![StepEntry { crate_name: CRATE, step: "copy", prepare: prepare_copy }];
    entries.extend([entry::<0>(), entry::<1>(), entry::<2>(), entry::<3>(), entry::<4>(), entry::<5>()]);
    entries.extend(crate::peers::steps());
    entries
}

/// The entry of `Step::ALL[INDEX]`.
fn entry<const INDEX: usize>() -> StepEntry {
    StepEntry { crate_name: CRATE, step: Step::ALL[INDEX].name(), prepare: prepare_step::<INDEX> }
}

/// A random `rows x cols` f32 matrix (uniform in [-1, 1)), on the host and on the device.
pub struct RandomMatrix {
    pub host: Vec<f32>,
    pub device: DeviceBuffer<f32>,
    pub rows: usize,
    pub cols: usize,
    pub seed: u64,
}

impl RandomMatrix {
    /// Compares a result downloaded from the device with the transpose (or, for a copy, the
    /// matrix itself) of this input.
    pub fn check(&self, what: &str, result: &[f32], transposed: bool) -> Checked {
        let wrong = if transposed {
            first_mismatch(&self.host, result, self.rows, self.cols).map(|m| m.to_string())
        } else {
            let same = result.len() == self.host.len()
                && result.iter().zip(&self.host).all(|(a, b)| a.to_bits() == b.to_bits());
            (!same).then(|| "the copy differs from its input".to_string())
        };
        match wrong {
            None => Checked::Correct,
            Some(why) => Checked::Wrong(format!(
                "{what}: {why} (random {} x {} matrix from seed {})",
                self.rows, self.cols, self.seed
            )),
        }
    }
}

/// How many random matrices [`random_matrix`] keeps: one per case of the family, so that the tour
/// (case by case) and the bench (step by step, each at every case) upload each input once.
const KEPT: usize = 3;

/// The random matrix of the case's shape drawn from `seed`. The last [`KEPT`] made are kept, so
/// the steps measured at a case share one input and one upload.
pub fn random_matrix(device: &Device, case: &Case, seed: u64) -> Result<Arc<RandomMatrix>> {
    static MADE: Mutex<Vec<(Device, Arc<RandomMatrix>)>> = Mutex::new(Vec::new());
    let (rows, cols) = (case.rows() as usize, case.cols() as usize);
    let n = case.elements()?;
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    let same = |(owner, matrix): &(Device, Arc<RandomMatrix>)| {
        owner.is_same(device) && (matrix.rows, matrix.cols, matrix.seed) == (rows, cols, seed)
    };
    if let Some((_, matrix)) = made.iter().find(|m| same(m)) {
        return Ok(matrix.clone());
    }
    if made.len() >= KEPT {
        made.remove(0); // free the oldest before making the next
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let host: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let matrix = Arc::new(RandomMatrix { device: device.upload(&host)?, host, rows, cols, seed });
    made.push((device.clone(), matrix.clone()));
    Ok(matrix)
}

/// What a measured step runs: a transpose, or step 1's copy.
enum Launcher {
    Transpose(Transposer),
    Copy(TileCopy),
}

/// A step on a random matrix: what is timed is one launch of its kernel.
struct StepCase {
    launcher: Launcher,
    input: Arc<RandomMatrix>,
    output: DeviceBuffer<f32>,
}

fn prepare(device: &Device, case: &Case, seed: u64, launcher: Launcher) -> Result<Box<dyn Prepared>> {
    let input = random_matrix(device, case, seed)?;
    let output = device.alloc::<f32>(input.host.len())?;
    Ok(Box::new(StepCase { launcher, input, output }))
}

fn prepare_step<const INDEX: usize>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    prepare(device, case, seed, Launcher::Transpose(Transposer::new(device, Step::ALL[INDEX])?))
}

fn prepare_copy(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    prepare(device, case, seed, Launcher::Copy(TileCopy::new(device)?))
}

impl Prepared for StepCase {
    fn queue(&mut self) -> Result<()> {
        let (input, rows, cols) = (self.input.device.as_view(), self.input.rows, self.input.cols);
        match &self.launcher {
            Launcher::Transpose(transposer) => transposer.transpose(input, rows, cols, &mut self.output),
            Launcher::Copy(copy) => copy.copy(input, rows, cols, &mut self.output),
        }
    }

    fn check(&mut self) -> Result<Checked> {
        self.output.fill_words(POISON)?;
        self.queue()?;
        let result = self.output.to_host()?;
        Ok(match &self.launcher {
            Launcher::Transpose(transposer) => self.input.check(transposer.step().name(), &result, true),
            Launcher::Copy(_) => self.input.check("copy", &result, false),
        })
    }
}
