//! Operators as data: the full reduction with any of eleven built-in operators ([`Operator`]), or
//! with a user's own, written in CUDA C++ and compiled at run time ([`UserReduce`]).
//!
//! Both run the same kernel templates (`cuda/operators.cuh`): a first pass over the input (16-byte
//! grid-stride loads and the shuffle block reduction, as [`crate::MultiLevel`]'s) and later passes
//! over the first pass's values, planned by [`crate::plan`]. Only the result is read back. The
//! operators' Rust side ([`Operator`], [`OperatorElement`], [`Reduced`], [`reference()`], the
//! [`OperatorReduction`] trait) is `reduction::operators`, re-exported here, shared with
//! reduce-atomic's one-launch form; their tests are `reduction::operator_suite`.
//!
//! Semantics (numpy's and torch's, written on the book's semantics page, each with its test):
//! - `Sum` and `Product` of integers wrap around (modulo 2^32 or 2^64); of floats they round, and a
//!   product overflows to ±inf, underflows to ±0, and is NaN where a NaN, or an inf times a 0, is
//!   in it. The sum of nothing is 0, the product 1.
//! - `Min`, `Max`: NaN wins (a NaN anywhere gives NaN). `ArgMin`, `ArgMax`: the index of the first
//!   extreme (ties go to the smaller index), or of the first NaN. None of the four has a value for
//!   an empty input: a [`GpuError::BadInput`].
//! - `All`, `Any`: an element is true when it is not zero (NaN is true, -0.0 false); of nothing,
//!   true and false.
//! - `BitAnd`, `BitOr`, `BitXor` of integers; of nothing, all ones, 0 and 0.
//!
//! What the kernels assume of an operator: associativity (the grouping depends on the plan, which
//! is fixed for one size on one GPU: the same input gives the same bits every run), and, unless it
//! says `commutative = false`, commutativity (the fast first pass hands each thread a strided share
//! of the input). A non-commutative operator is combined strictly in the elements' order.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, Element, GpuError, Kernel, KernelSource, LaunchConfig,
    Result, kernel_source,
};
pub use reduction::operators::{
    Kind, MAX_VALUE_WORDS, Operator, OperatorElement, OperatorFamily, OperatorReduction, Reduced,
    decode, empty, no_kernels, reference,
};
use reduction::{POISON_WORD, PassPlan, ReductionPlan};

use crate::{plan, queue_passes, scratch_needed};

const SOURCE: KernelSource = kernel_source!("reduce_operators.cu");

/// Passes' scratch: two buffers of words, and the result's words.
struct Scratch {
    buffers: [DeviceBuffer<u32>; 2],
    result: DeviceBuffer<u32>,
}

impl Scratch {
    fn new(device: &Device) -> Result<Self> {
        Ok(Scratch {
            buffers: [device.alloc(0)?, device.alloc(0)?],
            result: device.alloc(MAX_VALUE_WORDS)?,
        })
    }

    /// Grows the buffers to `values` values of `MAX_VALUE_WORDS` words.
    fn reserve(&mut self, device: &Device, values: usize) -> Result<()> {
        let words = values * MAX_VALUE_WORDS;
        if self.buffers[0].len() < words {
            self.buffers = [device.alloc(words)?, device.alloc(words)?];
        }
        Ok(())
    }

    fn poison(&mut self) -> Result<()> {
        for buffer in &mut self.buffers {
            buffer.fill_words(POISON_WORD)?;
        }
        self.result.fill_words(POISON_WORD)
    }
}

/// Queues `plan`'s passes of the kernel pair (`first` over `input`, `later` over values).
fn queue<T: Element>(
    device: &Device,
    plan: &ReductionPlan,
    (first, later): (&Kernel, &Kernel),
    input: DeviceView<'_, T>,
    scratch: &mut Scratch,
) -> Result<()> {
    let first_pass = |output: &mut DeviceBuffer<u32>, pass: &PassPlan| {
        device.launch(first, pass.config).arg(input).arg(output).arg(pass.inputs).run()
    };
    queue_passes(device, plan, first_pass, later, &mut scratch.buffers, &mut scratch.result)
}

// ANCHOR: reduce
/// The full reduction of `T` with any built-in [`Operator`] this type has kernels for.
pub struct Reduce<T: OperatorElement> {
    device: Device,
    kernels: HashMap<Operator, (Kernel, Kernel)>,
    scratch: Scratch,
    _element: std::marker::PhantomData<T>,
}

impl<T: OperatorElement> Reduce<T> {
    /// Loads the kernels of every operator of `T` (compiled once per process).
    pub fn new(device: &Device) -> Result<Self> {
        let mut kernels = HashMap::new();
        for &op in T::OPERATORS {
            let first = format!("reduce_{}_{}", op.name(), T::SUFFIX);
            let later = format!("{first}_later");
            kernels.insert(op, (device.kernel(&SOURCE, &first)?, device.kernel(&SOURCE, &later)?));
        }
        Ok(Reduce {
            device: device.clone(),
            kernels,
            scratch: Scratch::new(device)?,
            _element: Default::default(),
        })
    }

    /// The plan for `n` elements on this device.
    pub fn plan(&self, n: usize) -> ReductionPlan {
        plan("reduce_<op>_<type>", "reduce_<op>_<type>_later", n, self.device.facts().shape())
    }

    /// Grows the scratch buffers to what `n` elements need (never inside a warmed-up loop).
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        self.scratch.reserve(&self.device, scratch_needed(&self.plan(n)))
    }

    /// Sizes the scratch buffers for `n` elements and fills them with [`POISON_WORD`].
    pub fn poison_scratch(&mut self, n: usize) -> Result<()> {
        self.reserve(n)?;
        self.scratch.poison()
    }

    /// `op` over `input`; only the result is read back. An operator without an identity (min, max,
    /// argmin, argmax) over an empty input, or one `T` has no kernels for, is a
    /// [`GpuError::BadInput`].
    pub fn reduce(&mut self, op: Operator, input: DeviceView<'_, T>) -> Result<Reduced<T>> {
        if input.is_empty() {
            Self::kernels_of(&self.kernels, op)?;
            return empty(op);
        }
        self.queue(op, input)?;
        Ok(decode(op, &self.scratch.result.to_host()?))
    }

    /// Queues `op` over `input` (not empty); the result stays on the device (for timing).
    pub fn queue(&mut self, op: Operator, input: DeviceView<'_, T>) -> Result<()> {
        let plan = self.plan(input.len());
        self.reserve(input.len())?;
        let (first, later) = Self::kernels_of(&self.kernels, op)?;
        queue(&self.device, &plan, (first, later), input, &mut self.scratch)
    }

    fn kernels_of(
        kernels: &HashMap<Operator, (Kernel, Kernel)>,
        op: Operator,
    ) -> Result<(&Kernel, &Kernel)> {
        let (first, later) = kernels.get(&op).ok_or_else(|| no_kernels::<T>(op))?;
        Ok((first, later))
    }
}
// ANCHOR_END: reduce

impl<T: OperatorElement> OperatorReduction<T> for Reduce<T> {
    fn create(device: &Device) -> Result<Self> {
        Self::new(device)
    }
    fn plan(&self, n: usize) -> ReductionPlan {
        Reduce::plan(self, n)
    }
    fn poison_scratch(&mut self, n: usize) -> Result<()> {
        Reduce::poison_scratch(self, n)
    }
    fn reduce(&mut self, op: Operator, input: DeviceView<'_, T>) -> Result<Reduced<T>> {
        Reduce::reduce(self, op, input)
    }
    fn queue(&mut self, op: Operator, input: DeviceView<'_, T>) -> Result<()> {
        Reduce::queue(self, op, input)
    }
}

/// This crate's [`Reduce`] of every element type.
pub struct MultiLevelOperators;
impl OperatorFamily for MultiLevelOperators {
    type For<T: OperatorElement> = Reduce<T>;
}

// ANCHOR: user
/// A user's operator: the name of a CUDA C++ `struct` and the source that defines it.
///
/// The struct has `Input` (the element type: `float`, `int`, `unsigned int`, ...) and `Value`
/// (what is combined; plain data, a whole number of 32-bit words) types, a
/// `Value identity() const`, a `Value operator()(Value a, Value b) const`, and optionally a
/// `Value lift(Input x) const` (without it an element is converted to a Value) and a
/// `static constexpr bool commutative = false` (without it the operator is taken as commutative).
/// Its member functions are `__device__`. See the `sum_of_squares` and `moments` examples in the
/// tests and the book.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserOperator {
    pub name: String,
    pub source: String,
}

/// The file name a user's operator is compiled as: compile errors name it, with the line numbers of
/// the operator's own source.
pub fn user_file(name: &str) -> String {
    format!("{name}.cu")
}

/// The program a user's operator is compiled in: operators.cuh, the user's source (its lines
/// numbered as the user's own by `#line`), then the kernel pair of [`UserReduce`] and a kernel that
/// reports the Value's size.
fn user_program(op: &UserOperator, input_type: &str) -> String {
    let file = user_file(&op.name);
    let name = &op.name;
    format!(
        "#include \"operators.cuh\"\n\
         #line 1 \"{file}\"\n\
         {source}\n\
         #line 1 \"{name} (the kernels around it)\"\n\
         typedef UserOp<{name}> UserOperator;\n\
         typedef UserOperator::Value UserValue;\n\
         static_assert(sizeof(UserOperator::Input) == sizeof({input_type}) && \
         UserOperator::Input(1.5f) == \
         ({input_type})(1.5f), \"{name}::Input is not {input_type}, the element type it was asked \
         to reduce\");\n\
         __device__ __forceinline__ UserValue shuffle_down(UserValue value, int offset)\n\
         {{\n    return shuffle_words(value, offset);\n}}\n\
         OPERATOR_KERNELS(user_first, user_later, UserOperator)\n\
         extern \"C\" __global__ void user_value_words(unsigned int* words) {{ *words = \
         sizeof(UserValue) / 4; }}\n",
        source = op.source
    )
}

/// The program text, leaked once per distinct text (a compiled kernel source is `'static`; a
/// process compiles few operators).
fn interned(text: String) -> &'static str {
    static TEXTS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut texts = TEXTS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&known) = texts.get(text.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(text.into_boxed_str());
    texts.insert(leaked);
    leaked
}

/// The CUDA type of each element type a user's operator may take.
pub trait UserElement: Element {
    const CUDA_TYPE: &'static str;
}
impl UserElement for f32 {
    const CUDA_TYPE: &'static str = "float";
}
impl UserElement for i32 {
    const CUDA_TYPE: &'static str = "int";
}
impl UserElement for u32 {
    const CUDA_TYPE: &'static str = "unsigned int";
}

/// The full reduction of `T` with a user's operator, compiled by NVRTC into the same kernel
/// templates as the built-in operators.
pub struct UserReduce<T: UserElement> {
    device: Device,
    first: Kernel,
    later: Kernel,
    words: usize,
    identity: Vec<u32>,
    scratch: Scratch,
    _element: std::marker::PhantomData<T>,
}

impl<T: UserElement> UserReduce<T> {
    /// Compiles `op` for this device. A compile error is a [`GpuError::Compile`] that names the
    /// operator's file ([`user_file`]) and the line of its first error in the operator's own source
    /// (NVRTC's whole log beside it).
    pub fn new(device: &Device, op: &UserOperator) -> Result<Self> {
        let file = user_file(&op.name);
        let source = KernelSource {
            file: interned(file.clone()),
            code: interned(user_program(op, T::CUDA_TYPE)),
        };
        let first = device.kernel(&source, "user_first").map_err(|e| own_lines(e, &file))?;
        let later = device.kernel(&source, "user_later")?;
        let mut words = device.alloc::<u32>(1)?;
        device
            .launch(&device.kernel(&source, "user_value_words")?, LaunchConfig::linear(1, 1, 0))
            .arg(&mut words)
            .run()?;
        let words = words.to_host()?[0] as usize;
        let mut reduce = UserReduce {
            device: device.clone(),
            first,
            later,
            words,
            identity: Vec::new(),
            scratch: Scratch::new(device)?,
            _element: Default::default(),
        };
        if words > MAX_VALUE_WORDS {
            reduce.scratch.result = device.alloc(words)?;
        }
        reduce.identity = reduce.reduce(device.alloc::<T>(1)?.view(..0)?)?;
        Ok(reduce)
    }

    /// The words of the operator's Value.
    pub fn value_words(&self) -> usize {
        self.words
    }

    /// The plan for `n` elements on this device.
    pub fn plan(&self, n: usize) -> ReductionPlan {
        plan("user_first", "user_later", n, self.device.facts().shape())
    }

    /// Sizes the scratch buffers for `n` elements and fills them with [`POISON_WORD`].
    pub fn poison_scratch(&mut self, n: usize) -> Result<()> {
        self.reserve(n)?;
        self.scratch.poison()
    }

    fn reserve(&mut self, n: usize) -> Result<()> {
        let values = scratch_needed(&self.plan(n)) * self.words.div_ceil(MAX_VALUE_WORDS);
        self.scratch.reserve(&self.device, values)
    }

    /// The operator over `input`: its Value's words. The value of an empty input is the operator's
    /// `identity()` (a launch of one block over nothing).
    pub fn reduce(&mut self, input: DeviceView<'_, T>) -> Result<Vec<u32>> {
        if input.is_empty() && !self.identity.is_empty() {
            return Ok(self.identity.clone());
        }
        self.queue(input)?;
        Ok(self.scratch.result.to_host()?[..self.words].to_vec())
    }

    /// Queues the reduction of `input`; the result stays on the device (for timing).
    pub fn queue(&mut self, input: DeviceView<'_, T>) -> Result<()> {
        let mut plan = self.plan(input.len());
        if plan.passes.is_empty() {
            // One block over nothing writes the identity.
            plan = crate::plan("user_first", "user_later", 1, self.device.facts().shape());
            plan.passes[0].inputs = 0;
        }
        self.reserve(input.len())?;
        queue(&self.device, &plan, (&self.first, &self.later), input, &mut self.scratch)
    }
}

/// A compile error of a user's program, its line taken from the first error in the user's own
/// file (the kernels around it have their own file name).
fn own_lines(error: GpuError, file: &str) -> GpuError {
    match error {
        GpuError::Compile { log, .. } => {
            let own = log
                .lines()
                .filter(|l| l.starts_with(file) && l.contains(": error"))
                .find_map(|l| {
                    let rest = &l[file.len()..];
                    rest.strip_prefix('(')?.split(')').next()?.parse::<u32>().ok()
                });
            GpuError::Compile { file: file.to_string(), line: own, log }
        }
        other => other,
    }
}
// ANCHOR_END: user
