//! A parser for the PTX that NVRTC emits: module directives, `.entry` functions with `.param`s,
//! register declarations, `.shared` variables (static and `extern` dynamic), labels, predicated
//! instructions and their operands.
//!
//! Debug information (`.loc`, `.file`, `.section` blocks) and `.pragma`s are skipped. Constructs
//! the simulator cannot run (device functions, `.local` arrays, initialised variables, ...) are
//! rejected with [`SimError::UnsupportedConstruct`] naming them.

use std::collections::HashMap;

use crate::error::SimError;
use crate::ptx::{
    Instr, Kernel, MemBase, Module, Op, Operand, Param, Space, Special, Symbol, Type, Variable,
};

/// Marks a reference to the dynamic (`extern`) shared array until the static layout is known.
const DYNAMIC_SHARED: u32 = u32::MAX;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// Identifiers, directives (`.reg`), opcodes (`ld.global.f32`), registers (`%r1`), labels.
    Ident(String),
    /// Numbers as written (`16`, `0x1F`, `0f3F800000`, `9.5`).
    Num(String),
    Punct(char),
    Str(String),
}

struct Token {
    tok: Tok,
    line: usize,
}

/// Parses PTX text into a [`Module`].
pub fn parse(text: &str) -> Result<Module, SimError> {
    let lines: Vec<&str> = text.lines().collect();
    let tokens = tokenize(&lines)?;
    Parser { tokens, pos: 0, lines: &lines, variables: Vec::new() }.module()
}

/// Drops comments and debug information, then splits the rest into tokens.
fn tokenize(lines: &[&str]) -> Result<Vec<Token>, SimError> {
    let mut tokens = Vec::new();
    let mut section_depth: Option<i32> = None;
    for (i, raw) in lines.iter().enumerate() {
        let line = i + 1;
        let code = match raw.find("//") {
            Some(at) => &raw[..at],
            None => raw,
        };
        let trimmed = code.trim();
        if let Some(depth) = section_depth.as_mut() {
            *depth += trimmed.matches('{').count() as i32 - trimmed.matches('}').count() as i32;
            if *depth <= 0 && trimmed.contains('}') {
                section_depth = None;
            }
            continue;
        }
        if trimmed.starts_with(".loc")
            || trimmed.starts_with(".file")
            || trimmed.starts_with(".pragma")
        {
            continue;
        }
        if trimmed.starts_with(".section") {
            let depth = trimmed.matches('{').count() as i32 - trimmed.matches('}').count() as i32;
            section_depth = Some(depth);
            if depth == 0 && trimmed.contains('}') {
                section_depth = None;
            }
            continue;
        }
        let chars: Vec<char> = trimmed.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            if c.is_whitespace() {
                k += 1;
            } else if c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '%' | '.') {
                let start = k;
                k += 1;
                while k < chars.len() {
                    let d = chars[k];
                    if d.is_ascii_alphanumeric() || matches!(d, '_' | '$' | '.') {
                        k += 1;
                    } else if d == ':' && chars.get(k + 1) == Some(&':') {
                        k += 2;
                    } else {
                        break;
                    }
                }
                tokens.push(Token { tok: Tok::Ident(chars[start..k].iter().collect()), line });
            } else if c.is_ascii_digit() {
                let start = k;
                while k < chars.len() && (chars[k].is_ascii_alphanumeric() || chars[k] == '.') {
                    k += 1;
                }
                tokens.push(Token { tok: Tok::Num(chars[start..k].iter().collect()), line });
            } else if c == '"' {
                let start = k + 1;
                k += 1;
                while k < chars.len() && chars[k] != '"' {
                    k += 1;
                }
                if k >= chars.len() {
                    return Err(SimError::Parse { line, message: "unterminated string".into() });
                }
                tokens.push(Token { tok: Tok::Str(chars[start..k].iter().collect()), line });
                k += 1;
            } else if "{}()[]<>,;:@!+-|=".contains(c) {
                tokens.push(Token { tok: Tok::Punct(c), line });
                k += 1;
            } else if c == '/' && chars.get(k + 1) == Some(&'*') {
                return Err(SimError::UnsupportedConstruct {
                    line,
                    construct: "/* */ comments".into(),
                });
            } else {
                return Err(SimError::Parse {
                    line,
                    message: format!("unexpected character `{c}`"),
                });
            }
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    lines: &'a [&'a str],
    variables: Vec<Variable>,
}

/// Per-kernel state while parsing a body.
struct Body {
    regs: HashMap<String, u32>,
    num_regs: u32,
    params: HashMap<String, usize>,
    /// Function-local `.shared` declarations.
    local_shared: Vec<Variable>,
    /// Shared variables placed so far: name -> offset.
    shared_offsets: HashMap<String, u32>,
    shared_end: u32,
    dynamic_align: u32,
    labels: HashMap<String, usize>,
    /// (instruction, operand, label name, line) for branch targets resolved at the end.
    pending_labels: Vec<(usize, usize, String, usize)>,
}

impl<'a> Parser<'a> {
    fn line(&self) -> usize {
        self.tokens.get(self.pos).or(self.tokens.last()).map_or(0, |t| t.line)
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.tok)
    }

    fn next(&mut self) -> Result<Tok, SimError> {
        let line = self.line();
        let t = self.tokens.get(self.pos).map(|t| t.tok.clone());
        self.pos += 1;
        t.ok_or(SimError::Parse { line, message: "unexpected end of input".into() })
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, SimError> {
        Err(SimError::Parse { line: self.line(), message: message.into() })
    }

    fn unsupported<T>(&self, construct: impl Into<String>) -> Result<T, SimError> {
        Err(SimError::UnsupportedConstruct { line: self.line(), construct: construct.into() })
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), SimError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.err(format!("expected `{c}`, found {:?}", self.peek()))
        }
    }

    fn ident(&mut self) -> Result<String, SimError> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            other => {
                self.pos -= 1;
                self.err(format!("expected a name, found {other:?}"))
            }
        }
    }

    fn number(&mut self) -> Result<u64, SimError> {
        match self.next()? {
            Tok::Num(s) => match parse_int(&s) {
                Some(v) => Ok(v as u64),
                None => self.err(format!("bad number `{s}`")),
            },
            other => self.err(format!("expected a number, found {other:?}")),
        }
    }

    fn module(mut self) -> Result<Module, SimError> {
        let mut module = Module {
            version: String::new(),
            target: String::new(),
            kernels: Vec::new(),
            variables: Vec::new(),
            kernel_index: HashMap::new(),
        };
        while let Some(tok) = self.peek().cloned() {
            let Tok::Ident(word) = tok else {
                return self.err(format!("unexpected {tok:?} at module level"));
            };
            match word.as_str() {
                ".version" => {
                    self.pos += 1;
                    match self.next()? {
                        Tok::Num(v) => module.version = v,
                        other => return self.err(format!("bad .version {other:?}")),
                    }
                }
                ".target" => {
                    self.pos += 1;
                    module.target = self.ident()?;
                    while self.eat_punct(',') {
                        self.ident()?;
                    }
                }
                ".address_size" => {
                    self.pos += 1;
                    if self.number()? != 64 {
                        return self.unsupported(".address_size other than 64");
                    }
                }
                ".visible" | ".weak" | ".extern" | ".common" => {
                    self.pos += 1;
                    let extern_ = word == ".extern";
                    match self.peek() {
                        Some(Tok::Ident(w)) if w == ".entry" => {}
                        Some(Tok::Ident(w)) if w == ".func" => {
                            return self.unsupported(".func (device functions)");
                        }
                        _ => {
                            let v = self.variable(extern_)?;
                            self.variables.push(v);
                        }
                    }
                }
                ".entry" => {
                    self.pos += 1;
                    let kernel = self.entry()?;
                    if module
                        .kernel_index
                        .insert(kernel.name.clone(), module.kernels.len())
                        .is_some()
                    {
                        return self.err(format!("kernel `{}` defined twice", kernel.name));
                    }
                    module.kernels.push(kernel);
                }
                ".func" => return self.unsupported(".func (device functions)"),
                ".shared" | ".global" | ".const" => {
                    let v = self.variable(false)?;
                    self.variables.push(v);
                }
                _ => return self.unsupported(format!("module-level `{word}`")),
            }
        }
        module.variables = self.variables;
        Ok(module)
    }

    /// `[.extern] .shared|.global|.const [.align N] .type name[[N]] ;`
    fn variable(&mut self, extern_: bool) -> Result<Variable, SimError> {
        let space = match self.ident()?.as_str() {
            ".shared" => Space::Shared,
            ".global" => Space::Global,
            ".const" => Space::Const,
            ".local" => return self.unsupported(".local variables"),
            other => return self.unsupported(format!("declaration `{other}`")),
        };
        let mut align = 0;
        let mut ty = None;
        let name = loop {
            let word = self.ident()?;
            if word == ".align" {
                align = self.number()? as u32;
            } else if let Some(t) = word.strip_prefix('.').and_then(Type::from_suffix) {
                ty = Some(t);
            } else if word.starts_with('.') {
                return self.unsupported(format!("variable attribute `{word}`"));
            } else {
                break word;
            }
        };
        let Some(ty) = ty else {
            return self.err(format!("variable `{name}` has no type"));
        };
        let mut size = ty.bytes();
        let mut dynamic = false;
        while self.eat_punct('[') {
            if self.eat_punct(']') {
                dynamic = true;
            } else {
                size *= self.number()? as u32;
                self.expect_punct(']')?;
            }
        }
        if self.is_punct('=') {
            return self.unsupported(format!("initialised variable `{name}`"));
        }
        self.expect_punct(';')?;
        if dynamic && !(extern_ && space == Space::Shared) {
            return self.unsupported(format!("unsized array `{name}` outside `extern .shared`"));
        }
        Ok(Variable { name, space, align: align.max(ty.bytes()), size, dynamic })
    }

    fn entry(&mut self) -> Result<Kernel, SimError> {
        let name = self.ident()?;
        let mut params = Vec::new();
        self.expect_punct('(')?;
        if !self.eat_punct(')') {
            loop {
                params.push(self.param()?);
                if self.eat_punct(')') {
                    break;
                }
                self.expect_punct(',')?;
            }
        }
        // Performance directives (.maxntid, .minnctapersm, ...) up to the body: the cluster ones
        // are kept, the others skipped.
        let mut cluster = None;
        let mut explicit_cluster = false;
        while !self.is_punct('{') {
            match self.peek() {
                None => return self.err(format!("kernel `{name}` has no body")),
                Some(Tok::Ident(word)) if word == ".reqnctapercluster" => {
                    self.pos += 1;
                    cluster = Some(self.dimensions(".reqnctapercluster")?);
                }
                Some(Tok::Ident(word)) if word == ".explicitcluster" => {
                    self.pos += 1;
                    explicit_cluster = true;
                }
                // `.maxclusterrank n` bounds the cluster's size chosen at launch: nothing to keep.
                _ => self.pos += 1,
            }
        }
        self.expect_punct('{')?;
        let mut body = Body {
            regs: HashMap::new(),
            num_regs: 0,
            params: params.iter().enumerate().map(|(i, p)| (p.name.clone(), i)).collect(),
            local_shared: Vec::new(),
            shared_offsets: HashMap::new(),
            shared_end: 0,
            dynamic_align: 16,
            labels: HashMap::new(),
            pending_labels: Vec::new(),
        };
        let mut instrs = Vec::new();
        let mut depth = 1;
        while depth > 0 {
            let line = self.line();
            match self.next()? {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => depth -= 1,
                Tok::Punct('@') => {
                    let negated = self.eat_punct('!');
                    let reg = self.ident()?;
                    let Some(&index) = body.regs.get(&reg) else {
                        return self.err(format!("undeclared predicate `{reg}`"));
                    };
                    let opcode = self.ident()?;
                    let instr = self.instruction(
                        &mut body,
                        opcode,
                        Some((index, negated)),
                        line,
                        instrs.len(),
                    )?;
                    instrs.push(instr);
                }
                Tok::Ident(word) if word == ".reg" => self.registers(&mut body)?,
                Tok::Ident(word) if word == ".shared" => {
                    self.pos -= 1;
                    let v = self.variable(false)?;
                    body.local_shared.push(v);
                }
                Tok::Ident(word) if word == ".local" => {
                    return self.unsupported(".local variables (local arrays)");
                }
                Tok::Ident(word) if word.starts_with('.') => {
                    return self.unsupported(format!("directive `{word}` in a kernel body"));
                }
                Tok::Ident(word) if self.is_punct(':') => {
                    self.pos += 1;
                    if body.labels.insert(word.clone(), instrs.len()).is_some() {
                        return self.err(format!("label `{word}` defined twice"));
                    }
                }
                Tok::Ident(opcode) => {
                    let instr = self.instruction(&mut body, opcode, None, line, instrs.len())?;
                    instrs.push(instr);
                }
                other => return self.err(format!("unexpected {other:?} in kernel `{name}`")),
            }
        }
        for (i, a, label, line) in body.pending_labels {
            let Some(&target) = body.labels.get(&label) else {
                return Err(SimError::Parse { line, message: format!("unknown label `{label}`") });
            };
            instrs[i].args[a] = Operand::Label(target);
        }
        // The dynamic shared array starts after the static ones.
        let static_end = body.shared_end;
        let dynamic_offset = static_end.next_multiple_of(body.dynamic_align);
        for instr in &mut instrs {
            for arg in &mut instr.args {
                match arg {
                    Operand::Symbol(Symbol::Shared(o))
                    | Operand::Mem { base: MemBase::Symbol(Symbol::Shared(o)), .. }
                        if *o == DYNAMIC_SHARED =>
                    {
                        *o = dynamic_offset
                    }
                    _ => {}
                }
            }
        }
        let code: Vec<_> = instrs.iter().map(crate::decode::decode).collect();
        let registers_to_clear =
            crate::decode::registers_read_before_written(&instrs, &code, body.num_regs as usize);
        Ok(Kernel {
            name,
            params,
            static_shared_bytes: static_end,
            dynamic_shared_offset: dynamic_offset,
            cluster: cluster.unwrap_or((1, 1, 1)),
            explicit_cluster: explicit_cluster || cluster.is_some(),
            cluster_shape_at_launch: explicit_cluster && cluster.is_none(),
            num_regs: body.num_regs,
            code,
            registers_to_clear,
            instrs,
        })
    }

    /// `x [, y [, z]]` after a directive such as `.reqnctapercluster`: positive numbers, 1 for
    /// the dimensions left out.
    fn dimensions(&mut self, directive: &str) -> Result<(u32, u32, u32), SimError> {
        let mut dims = [1u32; 3];
        for (k, dim) in dims.iter_mut().enumerate() {
            if k > 0 && !self.eat_punct(',') {
                break;
            }
            match u32::try_from(self.number()?) {
                Ok(n) if n > 0 => *dim = n,
                _ => return self.err(format!("`{directive}` needs positive dimensions")),
            }
        }
        Ok((dims[0], dims[1], dims[2]))
    }

    /// `.param [.align N] .type name[[N]]`
    fn param(&mut self) -> Result<Param, SimError> {
        if self.ident()? != ".param" {
            return self.err("expected `.param`");
        }
        let mut align = 0;
        let mut ty = None;
        let name = loop {
            let word = self.ident()?;
            if word == ".align" {
                align = self.number()? as u32;
            } else if word == ".ptr" || word.starts_with(".global") || word == ".const" {
                // Pointer attributes (`.ptr.global.align 8`) do not change the layout.
                continue;
            } else if let Some(t) = word.strip_prefix('.').and_then(Type::from_suffix) {
                ty = Some(t);
            } else if word.starts_with('.') {
                return self.unsupported(format!("parameter attribute `{word}`"));
            } else {
                break word;
            }
        };
        let Some(ty) = ty else {
            return self.err(format!("parameter `{name}` has no type"));
        };
        let mut size = ty.bytes();
        if self.eat_punct('[') {
            size *= self.number()? as u32;
            self.expect_punct(']')?;
        }
        Ok(Param { name, size, align: align.max(ty.bytes()) })
    }

    /// `.reg .type %r<16>;` or `.reg .type %a, %b;`
    fn registers(&mut self, body: &mut Body) -> Result<(), SimError> {
        let ty = self.ident()?;
        if ty.strip_prefix('.').and_then(Type::from_suffix).is_none() {
            return self.unsupported(format!("register type `{ty}`"));
        }
        loop {
            let name = self.ident()?;
            if self.eat_punct('<') {
                let count = self.number()?;
                self.expect_punct('>')?;
                for i in 0..count {
                    body.regs.insert(format!("{name}{i}"), body.num_regs);
                    body.num_regs += 1;
                }
            } else {
                body.regs.insert(name, body.num_regs);
                body.num_regs += 1;
            }
            if self.eat_punct(';') {
                return Ok(());
            }
            self.expect_punct(',')?;
        }
    }

    fn instruction(
        &mut self,
        body: &mut Body,
        opcode: String,
        guard: Option<(u32, bool)>,
        line: usize,
        index: usize,
    ) -> Result<Instr, SimError> {
        let mut parts = opcode.split('.');
        let base = parts.next().unwrap_or_default();
        let op = Op::from_name(base);
        let mods: Vec<String> = parts.map(str::to_string).collect();
        let mut types = Vec::new();
        let mut space = Space::Generic;
        let mut vec = 1;
        for m in &mods {
            if let Some(t) = Type::from_suffix(m) {
                types.push(t);
            }
            let head = m.split("::").next().unwrap_or_default();
            match head {
                "global" => space = Space::Global,
                "shared" if m == "shared::cluster" => space = Space::SharedCluster,
                "shared" => space = Space::Shared,
                "local" => space = Space::Local,
                "param" => space = Space::Param,
                "const" => space = Space::Const,
                "v2" => vec = 2,
                "v4" => vec = 4,
                "v8" => vec = 8,
                _ => {}
            }
        }
        let mut args = Vec::new();
        if !self.eat_punct(';') {
            loop {
                let arg = if op == Op::Bra
                    && matches!(self.peek(), Some(Tok::Ident(s)) if !s.starts_with('%'))
                {
                    let label = self.ident()?;
                    body.pending_labels.push((index, args.len(), label, line));
                    Operand::Label(0)
                } else {
                    self.operand(body)?
                };
                args.push(arg);
                if self.eat_punct(';') {
                    break;
                }
                self.expect_punct(',')?;
            }
        }
        let text = self.lines.get(line - 1).map_or(String::new(), |l| l.trim().to_string());
        Ok(Instr { guard, op, mods, types, space, vec, args, line, text })
    }

    fn operand(&mut self, body: &mut Body) -> Result<Operand, SimError> {
        match self.next()? {
            Tok::Punct('{') => {
                let mut items = Vec::new();
                loop {
                    items.push(self.operand(body)?);
                    if self.eat_punct('}') {
                        return Ok(Operand::Vector(items));
                    }
                    self.expect_punct(',')?;
                }
            }
            Tok::Punct('[') => {
                let base = match self.next()? {
                    // Registers are `%r1`, or plain names declared in an inline-asm scope (`low`).
                    Tok::Ident(name) if name.starts_with('%') || body.regs.contains_key(&name) => {
                        match body.regs.get(&name) {
                            Some(&r) => MemBase::Reg(r),
                            None => return self.err(format!("undeclared register `{name}`")),
                        }
                    }
                    Tok::Ident(name) => MemBase::Symbol(self.symbol(body, &name)?),
                    Tok::Num(n) => {
                        let Some(v) = parse_int(&n) else {
                            return self.err(format!("bad address `{n}`"));
                        };
                        self.expect_punct(']')?;
                        return Ok(Operand::Mem { base: MemBase::Absolute, offset: v });
                    }
                    other => return self.err(format!("bad address {other:?}")),
                };
                let mut offset = 0;
                if self.eat_punct('+') {
                    let negative = self.eat_punct('-');
                    let v = self.number()? as i64;
                    offset = if negative { -v } else { v };
                } else if self.eat_punct('-') {
                    offset = -(self.number()? as i64);
                }
                self.expect_punct(']')?;
                Ok(Operand::Mem { base, offset })
            }
            Tok::Punct('!') => {
                let name = self.ident()?;
                match body.regs.get(&name) {
                    Some(&r) => Ok(Operand::NotReg(r)),
                    None => self.err(format!("undeclared register `{name}`")),
                }
            }
            Tok::Punct('-') => match self.next()? {
                Tok::Num(n) => match parse_int(&n) {
                    Some(v) => Ok(Operand::Imm(v.wrapping_neg())),
                    None => self.unsupported(format!("literal `-{n}`")),
                },
                other => self.err(format!("expected a number after `-`, found {other:?}")),
            },
            Tok::Num(n) => {
                parse_literal(&n).map_or_else(|| self.unsupported(format!("literal `{n}`")), Ok)
            }
            Tok::Ident(name) if name == "_" => Ok(Operand::Sink),
            Tok::Ident(name) if name.starts_with('%') || body.regs.contains_key(&name) => {
                if let Some(&r) = body.regs.get(&name) {
                    if self.eat_punct('|') {
                        let second = self.ident()?;
                        return match body.regs.get(&second) {
                            Some(&p) => Ok(Operand::Pair(r, p)),
                            None => self.err(format!("undeclared register `{second}`")),
                        };
                    }
                    return Ok(Operand::Reg(r));
                }
                match special(&name) {
                    Some(s) => Ok(Operand::Special(s)),
                    None if name.starts_with("%envreg")
                        || name.starts_with("%pm")
                        || name.starts_with("%globaltimer") =>
                    {
                        self.unsupported(format!("special register `{name}`"))
                    }
                    None => self.err(format!("undeclared register `{name}`")),
                }
            }
            Tok::Ident(name) => Ok(Operand::Symbol(self.symbol(body, &name)?)),
            other => self.err(format!("unexpected operand {other:?}")),
        }
    }

    /// Resolves a symbol: a parameter, a shared variable (placed on first use), or a global.
    fn symbol(&mut self, body: &mut Body, name: &str) -> Result<Symbol, SimError> {
        if let Some(&i) = body.params.get(name) {
            return Ok(Symbol::Param(i));
        }
        if let Some(&offset) = body.shared_offsets.get(name) {
            return Ok(Symbol::Shared(offset));
        }
        let var = body
            .local_shared
            .iter()
            .find(|v| v.name == name)
            .or_else(|| self.variables.iter().find(|v| v.name == name))
            .cloned();
        match var {
            Some(v) if v.space == Space::Shared => {
                let offset = if v.dynamic {
                    body.dynamic_align = body.dynamic_align.max(v.align);
                    DYNAMIC_SHARED
                } else {
                    let offset = body.shared_end.next_multiple_of(v.align.max(1));
                    body.shared_end = offset + v.size;
                    offset
                };
                body.shared_offsets.insert(name.to_string(), offset);
                Ok(Symbol::Shared(offset))
            }
            Some(v) => {
                let i = self.variables.iter().position(|x| x.name == v.name).unwrap_or(0);
                Ok(Symbol::Global(i))
            }
            None => self.err(format!("unknown symbol `{name}`")),
        }
    }
}

/// An integer literal: decimal, hex (`0x`), octal (`0` prefix), binary (`0b`), optional `U`.
fn parse_int(s: &str) -> Option<i64> {
    let s = s.strip_suffix('U').unwrap_or(s);
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()? as i64
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()? as i64
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()? as i64
    } else {
        s.parse::<u64>().ok()? as i64
    };
    Some(v)
}

/// A literal operand: an integer or a hex float (`0f3F800000`, `0d3FF0000000000000`).
fn parse_literal(s: &str) -> Option<Operand> {
    if let Some(h) = s.strip_prefix("0f").or_else(|| s.strip_prefix("0F")) {
        return (h.len() == 8).then(|| u32::from_str_radix(h, 16).ok().map(Operand::F32)).flatten();
    }
    if let Some(h) = s.strip_prefix("0d").or_else(|| s.strip_prefix("0D")) {
        return (h.len() == 16)
            .then(|| u64::from_str_radix(h, 16).ok().map(Operand::F64))
            .flatten();
    }
    parse_int(s).map(Operand::Imm)
}

fn special(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((reg, d)) = name.split_once('.') {
        let d = dim(d)?;
        return match reg {
            "%tid" => Some(Special::Tid(d)),
            "%ntid" => Some(Special::Ntid(d)),
            "%ctaid" => Some(Special::Ctaid(d)),
            "%nctaid" => Some(Special::Nctaid(d)),
            "%clusterid" => Some(Special::ClusterId(d)),
            "%nclusterid" => Some(Special::NClusterId(d)),
            "%cluster_ctaid" => Some(Special::ClusterCtaId(d)),
            "%cluster_nctaid" => Some(Special::ClusterNCtaId(d)),
            _ => None,
        };
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        "%smid" => Special::SmId,
        "%nsmid" => Special::NSmId,
        "%gridid" => Special::GridId,
        "%lanemask_eq" => Special::LaneMaskEq,
        "%lanemask_lt" => Special::LaneMaskLt,
        "%lanemask_le" => Special::LaneMaskLe,
        "%lanemask_gt" => Special::LaneMaskGt,
        "%lanemask_ge" => Special::LaneMaskGe,
        "%clock" => Special::Clock,
        "%clock64" => Special::Clock64,
        "%cluster_ctarank" => Special::ClusterCtaRank,
        "%cluster_nctarank" => Special::ClusterNCtaRank,
        "%is_explicit_cluster" => Special::IsExplicitCluster,
        _ => return None,
    })
}
