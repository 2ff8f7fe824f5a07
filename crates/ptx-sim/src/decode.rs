//! The compact form the interpreter executes: each [`Instr`] decoded once, at parse time, into an
//! [`Inst`] whose operands are register indices, masks and ready-made constants, whose branch
//! targets are instruction indices, and whose operation is an enum the interpreter matches once per
//! warp instruction (not once per lane, and never by comparing strings).
//!
//! Only the instructions the course's kernels run often get a dedicated form; everything else
//! decodes to [`Kind::PerLane`], which runs the original [`Instr`] through the general (slower)
//! per-lane interpreter. Both paths give the same results and the same counters.

use crate::memory::SHARED_WINDOW;
use crate::ptx::{Instr, MemBase, Op, Operand, Space, Special, Symbol, Type};

/// All-ones in the low `bits` bits.
pub(crate) fn mask(bits: u32) -> u64 {
    if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
}

/// The value of a constant operand read as type `ty`, before masking to the type's width; `None`
/// for operands that are not constants.
pub(crate) fn constant(op: &Operand, ty: Type) -> Option<u64> {
    Some(match *op {
        Operand::Imm(v) => match ty {
            Type::F(32) => (v as f32).to_bits() as u64,
            Type::F(64) => (v as f64).to_bits(),
            _ => v as u64,
        },
        Operand::F32(b) => match ty {
            Type::F(64) => (f32::from_bits(b) as f64).to_bits(),
            _ => b as u64,
        },
        Operand::F64(b) => match ty {
            Type::F(32) => (f64::from_bits(b) as f32).to_bits() as u64,
            _ => b,
        },
        Operand::Symbol(Symbol::Shared(o)) => o as u64,
        _ => return None,
    })
}

/// Where a source operand's value comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Src {
    Reg(u32),
    /// A predicate register read negated (`!%p1`).
    NotReg(u32),
    /// A constant, already converted to the operand's type and masked to its width.
    Imm(u64),
    Special(Special),
}

/// A source operand and the mask of the width it is read at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Arg {
    pub src: Src,
    pub mask: u64,
}

impl Arg {
    /// An operand no operation reads.
    const UNUSED: Arg = Arg { src: Src::Imm(0), mask: 0 };

    fn new(op: &Operand, ty: Type) -> Option<Arg> {
        let mask = mask(ty.bits());
        let src = match *op {
            Operand::Reg(r) => Src::Reg(r),
            Operand::NotReg(r) => Src::NotReg(r),
            Operand::Special(s) => Src::Special(s),
            ref other => Src::Imm(constant(other, ty)? & mask),
        };
        Some(Arg { src, mask })
    }
}

/// A destination register; `None` is the sink `_`.
pub(crate) type Dst = Option<u32>;

fn dst(op: &Operand) -> Option<Dst> {
    match *op {
        Operand::Reg(r) => Some(Some(r)),
        Operand::Sink => Some(None),
        _ => None,
    }
}

/// A lane-wise operation `d = f(a, b, c)`; the result is masked to the destination's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AluOp {
    /// `d = a` (mov, integer cvt between unsigned widths, cvta to or from global).
    Mov,
    /// `d = a` sign-extended from `bits` (cvt from a signed integer type).
    Sext(u32),
    Add,
    Sub,
    /// The low bits of `a * b` (`mul.lo`).
    MulLo,
    /// `a * b` of zero-extended operands (`mul.wide.u16/u32`).
    MulWideU,
    /// `a * b` of operands sign-extended from `bits` (`mul.wide.s16/s32`).
    MulWideS(u32),
    /// `a * b + c`, low bits (`mad.lo`).
    MadLo,
    MadWideU,
    MadWideS(u32),
    /// `a << b` on a `bits`-wide type (0 once `b >= bits`).
    Shl(u32),
    /// Logical `a >> b` on a `bits`-wide type.
    ShrU(u32),
    /// Arithmetic `a >> b` on a `bits`-wide type.
    ShrS(u32),
    And,
    Or,
    Xor,
    Not,
    MinU,
    MaxU,
    MinS(u32),
    MaxS(u32),
    /// Unsigned division and remainder: a zero divisor in an executing lane faults.
    DivU,
    RemU,
    /// `d = c ? a : b` (selp).
    Select,
    AddF32,
    SubF32,
    MulF32,
    FmaF32,
    AddF64,
    SubF64,
    MulF64,
    FmaF64,
}

/// A comparison of `setp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    /// `eq` .. `ge`: false when a float operand is NaN.
    Ordered(Order),
    /// Float comparisons that are true when either operand is NaN (`equ`, `ltu`, ...).
    Unordered(Order),
    /// Unsigned integer comparisons (`lo`, `ls`, `hi`, `hs`), whatever the type.
    Lo,
    Ls,
    Hi,
    Hs,
    Num,
    Nan,
}

/// The six relations `setp` tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// How `setp` compares: as signed integers of a width, unsigned integers, or floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpType {
    Signed(u32),
    Unsigned,
    F32,
    F64,
}

/// `setp`'s optional combination with a third predicate (`setp.lt.and.s32 p, a, b, c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// A load or store of up to four elements (`ld.global.v4.f32 {a, b, c, d}, [%rd1+16]`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemAccess {
    pub load: bool,
    pub space: Space,
    pub base: MemBase,
    pub offset: i64,
    /// Bytes per element.
    pub size: u32,
    /// Elements (1, 2 or 4).
    pub count: u32,
    /// Loads of signed types sign-extend from this many bits.
    pub sign_extend: Option<u32>,
    /// The registers a load writes, one per element.
    pub dsts: [Dst; 4],
    /// The values a store writes, one per element.
    pub srcs: [Arg; 4],
}

/// What a decoded instruction does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Alu {
        op: AluOp,
        dst: Dst,
        dst_mask: u64,
        a: Arg,
        b: Arg,
        c: Arg,
    },
    /// `setp`: `p = a cmp b` (combined with `c` by `bool_op`), `q = !(a cmp b)` (combined).
    Setp {
        cmp: Cmp,
        ty: CmpType,
        bool_op: Option<BoolOp>,
        p: Dst,
        q: Option<Dst>,
        a: Arg,
        b: Arg,
        c: Arg,
    },
    Mem(Box<MemAccess>),
    Shfl {
        mode: ShflMode,
        dst: Dst,
        pred: Option<Dst>,
        a: Arg,
        b: Arg,
        c: Arg,
    },
    Branch {
        target: u32,
    },
    /// `bar.sync` / `barrier.sync`: the executing lanes wait for the rest of the block.
    Barrier,
    /// `bar.sync a, b` / `barrier.sync a, b`: named barrier `a` of `b` threads (operands read when
    /// it executes); the executing warps wait until `b` threads, counted a warp (32) at a time,
    /// have arrived at barrier `a`.
    NamedBarrier,
    /// `barrier.cluster.arrive`: the executing lanes arrive at their cluster's barrier and go on.
    ClusterArrive,
    /// `barrier.cluster.wait`: the executing lanes wait until every thread of the cluster that has
    /// not exited has arrived (each lane must have arrived since its last wait).
    ClusterWait,
    /// `ret` / `exit`.
    Exit,
    /// Instructions with no effect in the simulator (fences, `bar.warp.sync`, `nanosleep`).
    Nop,
    /// Faults with `Unsupported(message)` when executed.
    Unsupported(String),
    /// Run the original instruction through the general per-lane interpreter.
    PerLane,
}

/// A decoded instruction: its guard predicate and what it does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Inst {
    /// `@%p` / `@!%p`: the predicate register and whether it is negated.
    pub guard: Option<(u32, bool)>,
    pub kind: Kind,
    /// A strong load (`.relaxed`, `.acquire` or `.volatile`): it may read what another block or
    /// thread wrote meanwhile, as a status word of a look-back is read (counted apart).
    pub strong_load: bool,
}

/// Decodes one instruction.
pub(crate) fn decode(i: &Instr) -> Inst {
    let strong_load = i.op == Op::Ld && ["relaxed", "acquire", "volatile"].iter().any(|m| i.has(m));
    Inst { guard: i.guard, kind: kind(i).unwrap_or(Kind::PerLane), strong_load }
}

/// Whether the instruction carries a rounding or precision modifier the fast float paths do not
/// model (they do round-to-nearest-even without flushing or saturating).
fn plain_float(i: &Instr) -> bool {
    !["rz", "rm", "rp", "approx", "ftz", "sat"].iter().any(|m| i.has(m))
}

/// The dedicated form of `i`, or `None` to run it per lane.
fn kind(i: &Instr) -> Option<Kind> {
    let operand = |n: usize| i.args.get(n);
    let ty = i.ty();
    match i.op {
        Op::Bra => Some(match operand(0) {
            Some(Operand::Label(target)) => Kind::Branch { target: *target as u32 },
            _ => Kind::Unsupported("indirect branch".into()),
        }),
        Op::Ret | Op::Exit => Some(Kind::Exit),
        Op::Bar | Op::Barrier if i.has("warp") => Some(Kind::Nop),
        // `.release` / `.relaxed` and `.acquire` order memory, which the simulator never reorders;
        // `.aligned` promises the whole warp executes it.
        Op::Barrier if i.has("cluster") => {
            Some(match (i.has("arrive"), i.has("wait"), i.args.is_empty()) {
                (true, false, true) => Kind::ClusterArrive,
                (false, true, true) => Kind::ClusterWait,
                _ => Kind::Unsupported(i.text.clone()),
            })
        }
        Op::Bar | Op::Barrier if i.has("arrive") || i.has("red") || i.args.len() > 2 => {
            Some(Kind::Unsupported(i.text.clone()))
        }
        Op::Bar | Op::Barrier if i.args.len() == 2 => Some(Kind::NamedBarrier),
        Op::Bar | Op::Barrier => Some(Kind::Barrier),
        // A thread's pause (`nanosleep`): the simulator runs blocks in order, so a pause changes
        // nothing it could observe.
        Op::Membar | Op::Fence | Op::Nanosleep => Some(Kind::Nop),
        Op::Mbarrier | Op::Cp | Op::Mapa | Op::Getctarank => None,
        Op::Ld | Op::St => mem(i, ty?),
        Op::Setp => setp(i, ty?),
        Op::Shfl => shfl(i),
        _ => alu(i, ty?),
    }
}

fn alu(i: &Instr, ty: Type) -> Option<Kind> {
    let bits = ty.bits();
    let operand = |n: usize| i.args.get(n);
    let read = |n: usize, t: Type| Arg::new(operand(n)?, t);
    let signed = matches!(ty, Type::S(_));
    let is_int = matches!(ty, Type::B(_) | Type::U(_) | Type::S(_) | Type::Pred);
    let u32_type = Type::U(32);
    let (op, dst_bits, a, b, c) = match (i.op, ty) {
        (Op::Mov, _) => (AluOp::Mov, bits, read(1, ty)?, Arg::UNUSED, Arg::UNUSED),
        (Op::Add | Op::Sub, Type::F(32) | Type::F(64)) if plain_float(i) => {
            let op = match (i.op, bits) {
                (Op::Add, 32) => AluOp::AddF32,
                (Op::Sub, 32) => AluOp::SubF32,
                (Op::Add, _) => AluOp::AddF64,
                _ => AluOp::SubF64,
            };
            (op, bits, read(1, ty)?, read(2, ty)?, Arg::UNUSED)
        }
        (Op::Mul, Type::F(32) | Type::F(64)) if plain_float(i) => {
            let op = if bits == 32 { AluOp::MulF32 } else { AluOp::MulF64 };
            (op, bits, read(1, ty)?, read(2, ty)?, Arg::UNUSED)
        }
        (Op::Fma | Op::Mad, Type::F(32) | Type::F(64)) if plain_float(i) => {
            let op = if bits == 32 { AluOp::FmaF32 } else { AluOp::FmaF64 };
            (op, bits, read(1, ty)?, read(2, ty)?, read(3, ty)?)
        }
        (Op::Add, _) if is_int && !i.has("sat") => {
            (AluOp::Add, bits, read(1, ty)?, read(2, ty)?, Arg::UNUSED)
        }
        (Op::Sub, _) if is_int && !i.has("sat") => {
            (AluOp::Sub, bits, read(1, ty)?, read(2, ty)?, Arg::UNUSED)
        }
        (Op::Mul | Op::Mad, _)
            if is_int && !i.has("hi") && !(i.op == Op::Mad && ty == Type::Pred) =>
        {
            let wide = i.has("wide");
            if wide && bits > 32 {
                return None;
            }
            let out_bits = if wide { bits * 2 } else { bits };
            let out_type = if signed { Type::S(out_bits) } else { Type::U(out_bits) };
            let op = match (i.op, wide, signed) {
                (Op::Mul, false, _) => AluOp::MulLo,
                (Op::Mul, true, false) => AluOp::MulWideU,
                (Op::Mul, true, true) => AluOp::MulWideS(bits),
                (_, false, _) => AluOp::MadLo,
                (_, true, false) => AluOp::MadWideU,
                (_, true, true) => AluOp::MadWideS(bits),
            };
            let c = if i.op == Op::Mad { read(3, out_type)? } else { Arg::UNUSED };
            (op, out_bits, read(1, ty)?, read(2, ty)?, c)
        }
        (Op::Div | Op::Rem, Type::B(_) | Type::U(_)) => {
            let op = if i.op == Op::Div { AluOp::DivU } else { AluOp::RemU };
            (op, bits, read(1, ty)?, read(2, ty)?, Arg::UNUSED)
        }
        (Op::Min | Op::Max, _) if is_int => {
            let op = match (i.op, signed) {
                (Op::Min, false) => AluOp::MinU,
                (Op::Max, false) => AluOp::MaxU,
                (Op::Min, true) => AluOp::MinS(bits),
                _ => AluOp::MaxS(bits),
            };
            (op, bits, read(1, ty)?, read(2, ty)?, Arg::UNUSED)
        }
        (Op::And | Op::Or | Op::Xor, _) if is_int => {
            let op = match i.op {
                Op::And => AluOp::And,
                Op::Or => AluOp::Or,
                _ => AluOp::Xor,
            };
            (op, bits, read(1, ty)?, read(2, ty)?, Arg::UNUSED)
        }
        (Op::Not, _) if is_int => (AluOp::Not, bits, read(1, ty)?, Arg::UNUSED, Arg::UNUSED),
        (Op::Shl | Op::Shr, _) if is_int => {
            let op = match (i.op, signed) {
                (Op::Shl, _) => AluOp::Shl(bits),
                (_, true) => AluOp::ShrS(bits),
                _ => AluOp::ShrU(bits),
            };
            (op, bits, read(1, ty)?, read(2, u32_type)?, Arg::UNUSED)
        }
        (Op::Selp, _) => (AluOp::Select, 64, read(1, ty)?, read(2, ty)?, read(3, Type::Pred)?),
        (Op::Cvt, _) => {
            let (&to, &from) = (i.types.first()?, i.types.get(1)?);
            let int = |t: Type| matches!(t, Type::B(_) | Type::U(_) | Type::S(_));
            if !int(to) || !int(from) || i.has("sat") {
                return None;
            }
            let op = if let Type::S(b) = from { AluOp::Sext(b) } else { AluOp::Mov };
            (op, to.bits(), read(1, from)?, Arg::UNUSED, Arg::UNUSED)
        }
        (Op::Cvta, _) => {
            let (op, window) = match (i.space, i.has("to")) {
                (Space::Global, _) => (AluOp::Mov, 0),
                (Space::Shared | Space::SharedCluster, false) => (AluOp::Add, SHARED_WINDOW),
                (Space::Shared | Space::SharedCluster, true) => (AluOp::Sub, SHARED_WINDOW),
                _ => return None,
            };
            (op, bits, read(1, ty)?, Arg { src: Src::Imm(window), mask: u64::MAX }, Arg::UNUSED)
        }
        _ => return None,
    };
    // A mov whose destination or source is a vector (`mov.b64 {%r1, %r2}, %rd1`) runs per lane.
    let dst = dst(operand(0)?)?;
    Some(Kind::Alu { op, dst, dst_mask: mask(dst_bits), a, b, c })
}

fn setp(i: &Instr, ty: Type) -> Option<Kind> {
    let float = matches!(ty, Type::F(_));
    let cmp = match (i.mods.first()?.as_str(), float) {
        ("eq", _) => Cmp::Ordered(Order::Eq),
        ("ne", _) => Cmp::Ordered(Order::Ne),
        ("lt", _) => Cmp::Ordered(Order::Lt),
        ("le", _) => Cmp::Ordered(Order::Le),
        ("gt", _) => Cmp::Ordered(Order::Gt),
        ("ge", _) => Cmp::Ordered(Order::Ge),
        ("equ", true) => Cmp::Unordered(Order::Eq),
        ("neu", true) => Cmp::Unordered(Order::Ne),
        ("ltu", true) => Cmp::Unordered(Order::Lt),
        ("leu", true) => Cmp::Unordered(Order::Le),
        ("gtu", true) => Cmp::Unordered(Order::Gt),
        ("geu", true) => Cmp::Unordered(Order::Ge),
        ("num", true) => Cmp::Num,
        ("nan", true) => Cmp::Nan,
        ("lo", false) => Cmp::Lo,
        ("ls", false) => Cmp::Ls,
        ("hi", false) => Cmp::Hi,
        ("hs", false) => Cmp::Hs,
        _ => return None,
    };
    let cmp_type = match ty {
        Type::F(32) => CmpType::F32,
        Type::F(64) => CmpType::F64,
        // Equality does not depend on the sign: compare the bits, without sign-extending.
        Type::S(_) if matches!(cmp, Cmp::Ordered(Order::Eq | Order::Ne)) => CmpType::Unsigned,
        Type::S(b) => CmpType::Signed(b),
        Type::B(_) | Type::U(_) => CmpType::Unsigned,
        _ => return None,
    };
    let bool_op = match i.mods.get(1).map(String::as_str) {
        Some("and") => Some(BoolOp::And),
        Some("or") => Some(BoolOp::Or),
        Some("xor") => Some(BoolOp::Xor),
        _ => None,
    };
    let c = match bool_op {
        Some(_) => Arg::new(i.args.get(3)?, Type::Pred)?,
        None => Arg::UNUSED,
    };
    let (p, q) = match *i.args.first()? {
        Operand::Pair(p, q) => (Some(p), Some(Some(q))),
        ref other => (dst(other)?, None),
    };
    let a = Arg::new(i.args.get(1)?, ty)?;
    let b = Arg::new(i.args.get(2)?, ty)?;
    Some(Kind::Setp { cmp, ty: cmp_type, bool_op, p, q, a, b, c })
}

fn shfl(i: &Instr) -> Option<Kind> {
    let mode = if i.has("down") {
        ShflMode::Down
    } else if i.has("up") {
        ShflMode::Up
    } else if i.has("bfly") {
        ShflMode::Bfly
    } else if i.has("idx") {
        ShflMode::Idx
    } else {
        return None;
    };
    let u32_type = Type::U(32);
    let (dst_reg, pred) = match *i.args.first()? {
        Operand::Pair(d, p) => (Some(d), Some(Some(p))),
        ref other => (dst(other)?, None),
    };
    Some(Kind::Shfl {
        mode,
        dst: dst_reg,
        pred,
        a: Arg::new(i.args.get(1)?, Type::B(32))?,
        b: Arg::new(i.args.get(2)?, u32_type)?,
        c: Arg::new(i.args.get(3)?, u32_type)?,
    })
}

fn mem(i: &Instr, ty: Type) -> Option<Kind> {
    let spaces = [Space::Generic, Space::Global, Space::Shared, Space::SharedCluster, Space::Param];
    if !spaces.contains(&i.space) || i.vec > 4 {
        return None;
    }
    if !matches!(ty, Type::B(_) | Type::U(_) | Type::S(_) | Type::F(_)) || ty.bits() > 64 {
        return None;
    }
    let load = i.op == Op::Ld;
    let (address, data) =
        if load { (i.args.get(1)?, i.args.first()?) } else { (i.args.first()?, i.args.get(1)?) };
    let Operand::Mem { base, offset } = *address else { return None };
    if matches!(base, MemBase::Symbol(Symbol::Global(_))) {
        return None;
    }
    let items: &[Operand] = match data {
        Operand::Vector(v) => v,
        other => std::slice::from_ref(other),
    };
    if items.len() != i.vec as usize {
        return None;
    }
    let mut dsts = [None; 4];
    let mut srcs = [Arg::UNUSED; 4];
    for (k, item) in items.iter().enumerate() {
        if load {
            dsts[k] = dst(item)?;
        } else {
            srcs[k] = Arg::new(item, ty)?;
        }
    }
    Some(Kind::Mem(Box::new(MemAccess {
        load,
        space: i.space,
        base,
        offset,
        size: ty.bytes(),
        count: i.vec,
        sign_extend: if let Type::S(b) = ty { Some(b) } else { None },
        dsts,
        srcs,
    })))
}

/// The registers of `instrs` that some path may read before it writes them. PTX leaves such
/// registers undefined; the simulator starts them at 0 in every block, so only these rows need
/// clearing between blocks (every other register is written before it is read, in every thread).
///
/// A forward "definitely written" analysis over the control-flow graph: a register counts as
/// written after an unguarded instruction that the compact form shows writes it; instructions run
/// per lane count as reading every register they name and writing none (conservative).
pub(crate) fn registers_read_before_written(
    instrs: &[Instr],
    code: &[Inst],
    num_regs: usize,
) -> Vec<u32> {
    let n = instrs.len();
    let words = num_regs.div_ceil(64);
    let mut reads: Vec<Vec<u32>> = Vec::with_capacity(n);
    let mut writes: Vec<Vec<u32>> = Vec::with_capacity(n);
    let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, (instr, inst)) in instrs.iter().zip(code).enumerate() {
        let only_writes_first = match &inst.kind {
            Kind::Alu { .. } | Kind::Setp { .. } | Kind::Shfl { .. } => true,
            Kind::Mem(access) => access.load,
            _ => false,
        };
        let mut read = Vec::new();
        for (k, arg) in instr.args.iter().enumerate() {
            if !(k == 0 && only_writes_first) {
                registers_named(arg, &mut read);
            }
        }
        if let Some((p, _)) = inst.guard {
            read.push(p);
        }
        let mut written: Vec<u32> = Vec::new();
        if inst.guard.is_none() {
            match &inst.kind {
                Kind::Alu { dst, .. } => written.extend(dst),
                Kind::Setp { p, q, .. } => written.extend(p.iter().chain(q.iter().flatten())),
                Kind::Shfl { dst, pred, .. } => {
                    written.extend(dst.iter().chain(pred.iter().flatten()))
                }
                Kind::Mem(access) if access.load => written.extend(access.dsts.iter().flatten()),
                _ => {}
            }
        }
        reads.push(read);
        writes.push(written);
        let falls_through = match inst.kind {
            Kind::Branch { .. } | Kind::Exit => inst.guard.is_some(),
            _ => true,
        };
        if falls_through && i + 1 < n {
            predecessors[i + 1].push(i);
        }
        if let Kind::Branch { target } = inst.kind {
            if (target as usize) < n {
                predecessors[target as usize].push(i);
            }
        }
    }
    // written_before[i]: registers written on every path from the entry to instruction i.
    let full = vec![u64::MAX; words];
    let mut written_before: Vec<Vec<u64>> = vec![full.clone(); n];
    if n > 0 {
        written_before[0] = vec![0; words];
    }
    let after = |set: &Vec<u64>, i: usize| {
        let mut out = set.clone();
        for &r in &writes[i] {
            out[r as usize / 64] |= 1 << (r % 64);
        }
        out
    };
    let mut changed = true;
    while changed {
        changed = false;
        for i in 1..n {
            if predecessors[i].is_empty() {
                continue;
            }
            let mut set = full.clone();
            for &p in &predecessors[i] {
                for (s, o) in set.iter_mut().zip(after(&written_before[p], p)) {
                    *s &= o;
                }
            }
            if set != written_before[i] {
                written_before[i] = set;
                changed = true;
            }
        }
    }
    let mut unsafe_reads = vec![false; num_regs];
    for (i, read) in reads.iter().enumerate() {
        for &r in read {
            if written_before[i][r as usize / 64] & (1 << (r % 64)) == 0 {
                unsafe_reads[r as usize] = true;
            }
        }
    }
    (0..num_regs as u32).filter(|&r| unsafe_reads[r as usize]).collect()
}

/// Every register an operand names.
fn registers_named(op: &Operand, out: &mut Vec<u32>) {
    match op {
        Operand::Reg(r) | Operand::NotReg(r) => out.push(*r),
        Operand::Pair(a, b) => out.extend([*a, *b]),
        Operand::Vector(items) => items.iter().for_each(|item| registers_named(item, out)),
        Operand::Mem { base: MemBase::Reg(r), .. } => out.push(*r),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::parse;

    fn cleared(body: &str) -> Vec<u32> {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 \
             p)\n{{\n{body}\n}}\n"
        );
        parse(&ptx).unwrap().kernels[0].registers_to_clear.clone()
    }

    #[test]
    fn registers_written_first_on_every_path_are_not_cleared() {
        // %r1 is written before every read; %r2 is read before any write; %r3 is written only
        // under a guard, then read; %r4 is written on one side of a branch only.
        let body = "
            .reg .pred %p<2>;
            .reg .b32 %r<5>;
            mov.u32 %r1, %tid.x;
            add.s32 %r1, %r1, %r2;
            setp.eq.s32 %p1, %r1, 0;
            @%p1 mov.u32 %r3, 7;
            add.s32 %r1, %r1, %r3;
            @%p1 bra $L_skip;
            mov.u32 %r4, 1;
        $L_skip:
            add.s32 %r1, %r1, %r4;
            ret;";
        // Registers are numbered in declaration order: %p0 %p1 %r0 %r1 %r2 %r3 %r4.
        assert_eq!(cleared(body), vec![4, 5, 6]);
    }

    #[test]
    fn a_loop_carried_register_written_before_the_loop_is_not_cleared() {
        let body = "
            .reg .pred %p<2>;
            .reg .b32 %r<3>;
            mov.u32 %r1, 0;
        $L_loop:
            add.s32 %r1, %r1, 1;
            setp.lt.u32 %p1, %r1, 10;
            @%p1 bra $L_loop;
            ret;";
        assert_eq!(cleared(body), Vec::<u32>::new());
    }
}
