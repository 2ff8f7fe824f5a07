//! The parsed form of a PTX module: kernels, their parameters, registers, shared variables and
//! decoded instructions. Register names, labels and symbols are resolved at parse time, so the
//! interpreter works on indices only.

use std::collections::HashMap;

/// A PTX scalar type: its kind and width in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Type {
    /// Untyped bits (`.b8` .. `.b64`).
    B(u32),
    /// Unsigned integer.
    U(u32),
    /// Signed integer.
    S(u32),
    /// IEEE float (`.f16`, `.f32`, `.f64`).
    F(u32),
    /// bfloat16 (`.bf16`).
    Bf16,
    /// Two halves in 32 bits (`.f16x2`).
    F16x2,
    /// Two bfloat16 in 32 bits (`.bf16x2`).
    Bf16x2,
    /// A predicate.
    Pred,
}

impl Type {
    pub(crate) fn from_suffix(s: &str) -> Option<Type> {
        let (kind, bits) = s.split_at(1.min(s.len()));
        match s {
            "pred" => return Some(Type::Pred),
            "bf16" => return Some(Type::Bf16),
            "f16x2" => return Some(Type::F16x2),
            "bf16x2" => return Some(Type::Bf16x2),
            _ => {}
        }
        let bits: u32 = bits.parse().ok()?;
        if ![8, 16, 32, 64, 128].contains(&bits) {
            return None;
        }
        match kind {
            "b" => Some(Type::B(bits)),
            "u" => Some(Type::U(bits)),
            "s" => Some(Type::S(bits)),
            "f" if bits >= 16 => Some(Type::F(bits)),
            _ => None,
        }
    }

    /// Width in bits (1 for predicates).
    pub(crate) fn bits(self) -> u32 {
        match self {
            Type::B(b) | Type::U(b) | Type::S(b) | Type::F(b) => b,
            Type::Bf16 => 16,
            Type::F16x2 | Type::Bf16x2 => 32,
            Type::Pred => 1,
        }
    }

    /// Size in bytes in memory.
    pub(crate) fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }
}

/// A state space of a memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Generic,
    Global,
    /// `.shared` / `.shared::cta`: the executing CTA's shared memory.
    Shared,
    /// `.shared::cluster`: the shared memory of any CTA of the cluster (see `memory`'s cluster
    /// window); the executing CTA's own offsets are addresses in it too.
    SharedCluster,
    Local,
    Param,
    Const,
}

/// Special registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    SmId,
    NSmId,
    GridId,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    Clock,
    Clock64,
    /// `%cluster_ctarank`: the CTA's linear rank in its cluster.
    ClusterCtaRank,
    /// `%cluster_nctarank`: the CTAs of a cluster.
    ClusterNCtaRank,
    /// `%clusterid.{x,y,z}`: the cluster's index in the grid.
    ClusterId(u8),
    /// `%nclusterid.{x,y,z}`: the grid's clusters per dimension.
    NClusterId(u8),
    /// `%cluster_ctaid.{x,y,z}`: the CTA's index in its cluster.
    ClusterCtaId(u8),
    /// `%cluster_nctaid.{x,y,z}`: the cluster's shape.
    ClusterNCtaId(u8),
    /// `%is_explicit_cluster`: whether the kernel declares its cluster.
    IsExplicitCluster,
}

/// What a symbol in an operand refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Symbol {
    /// The kernel's parameter number `n`.
    Param(usize),
    /// A shared variable at this byte offset of the block's shared memory.
    Shared(u32),
    /// A module-level `.global` variable (declared, not supported at run time).
    Global(usize),
}

/// An instruction operand.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    Reg(u32),
    /// A predicate register read negated (`!%p1`).
    NotReg(u32),
    /// An integer literal.
    Imm(i64),
    /// A float literal of type f32 (`0fXXXXXXXX`), as bits.
    F32(u32),
    /// A float literal of type f64 (`0dXXXXXXXXXXXXXXXX`), as bits.
    F64(u64),
    Special(Special),
    /// The address of a symbol (`mov.u32 %r1, sdata;`).
    Symbol(Symbol),
    /// `{%f1, %f2, ...}`.
    Vector(Vec<Operand>),
    /// `[base+offset]`.
    Mem {
        base: MemBase,
        offset: i64,
    },
    /// `%r1|%p1`: a destination with a predicate output (shfl, setp).
    Pair(u32, u32),
    /// A branch target: an instruction index.
    Label(usize),
    /// `_` (a sink destination).
    Sink,
}

/// The base of a memory operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum MemBase {
    Reg(u32),
    Symbol(Symbol),
    Absolute,
}

/// The base operation of an instruction (its opcode before the first dot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Mov,
    Add,
    Sub,
    Mul,
    Mad,
    Fma,
    Div,
    Rem,
    Min,
    Max,
    Neg,
    Abs,
    Not,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Selp,
    Setp,
    Cvt,
    Cvta,
    Ld,
    St,
    Atom,
    Red,
    Bar,
    Barrier,
    Membar,
    Fence,
    Nanosleep,
    Shfl,
    Vote,
    Bra,
    Ret,
    Exit,
    Trap,
    Bfi,
    Bfe,
    Popc,
    Clz,
    Brev,
    Sqrt,
    Rcp,
    Ex2,
    Activemask,
    Prmt,
    Shf,
    Bfind,
    Match,
    /// `mbarrier.*`: a shared-memory barrier object that counts arrivals and bytes (Hopper).
    Mbarrier,
    /// `cp.async.bulk.*`: a bulk copy from global to shared memory, completing on an mbarrier.
    Cp,
    /// `mapa`: the address of a shared variable in another CTA of the cluster.
    Mapa,
    /// `getctarank`: the rank of the CTA whose shared memory an address is in.
    Getctarank,
    /// Anything else: parses, and fails with a clear error if executed.
    Unknown,
}

impl Op {
    pub(crate) fn from_name(name: &str) -> Op {
        match name {
            "mov" => Op::Mov,
            "add" => Op::Add,
            "sub" => Op::Sub,
            "mul" => Op::Mul,
            "mad" => Op::Mad,
            "fma" => Op::Fma,
            "div" => Op::Div,
            "rem" => Op::Rem,
            "min" => Op::Min,
            "max" => Op::Max,
            "neg" => Op::Neg,
            "abs" => Op::Abs,
            "not" => Op::Not,
            "and" => Op::And,
            "or" => Op::Or,
            "xor" => Op::Xor,
            "shl" => Op::Shl,
            "shr" => Op::Shr,
            "selp" => Op::Selp,
            "setp" => Op::Setp,
            "cvt" => Op::Cvt,
            "cvta" => Op::Cvta,
            "ld" => Op::Ld,
            "st" => Op::St,
            "atom" => Op::Atom,
            "red" => Op::Red,
            "bar" => Op::Bar,
            "barrier" => Op::Barrier,
            "membar" => Op::Membar,
            "fence" => Op::Fence,
            "nanosleep" => Op::Nanosleep,
            "shfl" => Op::Shfl,
            "vote" => Op::Vote,
            "bra" => Op::Bra,
            "ret" => Op::Ret,
            "exit" => Op::Exit,
            "trap" => Op::Trap,
            "bfi" => Op::Bfi,
            "bfe" => Op::Bfe,
            "popc" => Op::Popc,
            "clz" => Op::Clz,
            "brev" => Op::Brev,
            "sqrt" => Op::Sqrt,
            "rcp" => Op::Rcp,
            "ex2" => Op::Ex2,
            "activemask" => Op::Activemask,
            "prmt" => Op::Prmt,
            "shf" => Op::Shf,
            "bfind" => Op::Bfind,
            "match" => Op::Match,
            "mbarrier" => Op::Mbarrier,
            "cp" => Op::Cp,
            "mapa" => Op::Mapa,
            "getctarank" => Op::Getctarank,
            _ => Op::Unknown,
        }
    }
}

/// A decoded instruction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Instr {
    /// `@%p` / `@!%p`: the predicate register and whether it is negated.
    pub guard: Option<(u32, bool)>,
    pub op: Op,
    /// The opcode's suffixes after the base, in order (`["global", "nc", "v4", "f32"]`).
    pub mods: Vec<String>,
    /// The type suffixes among `mods`, in order (cvt has two: destination, source).
    pub types: Vec<Type>,
    /// The state space named in the opcode, if any.
    pub space: Space,
    /// Vector width (`.v2`, `.v4`), 1 otherwise.
    pub vec: u32,
    pub args: Vec<Operand>,
    /// 1-based line in the PTX text.
    pub line: usize,
    /// The instruction as written, for error messages.
    pub text: String,
}

impl Instr {
    /// Whether the opcode carries the suffix `m`.
    pub(crate) fn has(&self, m: &str) -> bool {
        self.mods.iter().any(|x| x == m)
    }

    /// The last type suffix (the operation type), if any.
    pub(crate) fn ty(&self) -> Option<Type> {
        self.types.last().copied()
    }
}

/// A kernel parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    /// Size in bytes.
    pub size: u32,
    /// Alignment in bytes.
    pub align: u32,
}

/// One `.entry` function.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    /// Bytes of statically declared shared memory (dynamic shared memory starts after it).
    pub static_shared_bytes: u32,
    /// Offset of the dynamic (`extern .shared`) array in the block's shared memory.
    pub(crate) dynamic_shared_offset: u32,
    /// The shape of the kernel's thread block clusters, from `.reqnctapercluster` (what CUDA's
    /// `__cluster_dims__` compiles to); (1, 1, 1) when the kernel declares none. A launch groups
    /// the grid's blocks into clusters of this shape.
    pub cluster: (u32, u32, u32),
    /// Whether the kernel declares `.explicitcluster` or `.reqnctapercluster` (what
    /// `%is_explicit_cluster` reads).
    pub explicit_cluster: bool,
    /// `.explicitcluster` without `.reqnctapercluster`: the cluster's shape would be given at
    /// launch, which [`crate::Machine::launch`] cannot do.
    pub(crate) cluster_shape_at_launch: bool,
    pub(crate) num_regs: u32,
    /// The instructions as parsed (for error messages and the general per-lane interpreter).
    pub(crate) instrs: Vec<Instr>,
    /// The same instructions decoded for execution, one per entry of `instrs`.
    pub(crate) code: Vec<crate::decode::Inst>,
    /// The registers some path may read before writing them: the only ones cleared between blocks.
    pub(crate) registers_to_clear: Vec<u32>,
}

impl Kernel {
    /// The number of instructions in the kernel's body.
    pub fn instruction_count(&self) -> usize {
        self.instrs.len()
    }
}

/// A module-level variable (`.global`, `.shared`, `.const`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Variable {
    pub name: String,
    pub space: Space,
    pub align: u32,
    pub size: u32,
    /// `extern .shared x[]`: the dynamic shared memory.
    pub dynamic: bool,
}

/// A parsed PTX module.
#[derive(Debug, Clone, PartialEq)]
pub struct Module {
    /// `.version`, e.g. `"9.5"`.
    pub version: String,
    /// `.target`, e.g. `"sm_90"`.
    pub target: String,
    pub kernels: Vec<Kernel>,
    pub(crate) variables: Vec<Variable>,
    pub(crate) kernel_index: HashMap<String, usize>,
}

impl Module {
    /// The kernel named `name`, if the module has one.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernel_index.get(name).map(|&i| &self.kernels[i])
    }

    /// The names of the module's kernels, in the order they appear.
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.kernels.iter().map(|k| k.name.as_str())
    }
}
