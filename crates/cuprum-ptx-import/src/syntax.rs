//! PTX text as tokens, then as kernels of declarations and instructions: the syntax the
//! importer reads, with each item's line for errors. Only the shape is checked here; what
//! each instruction means is `lower`'s.

use crate::ImportError;

/// A token and the line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tok {
    pub(crate) text: String,
    pub(crate) line: usize,
}

/// The tokens of `src`: words (names, opcodes with their dots, registers, numbers) and
/// one-character punctuation; comments dropped.
pub(crate) fn tokens(src: &str) -> Result<Vec<Tok>, ImportError> {
    let chars: Vec<char> = src.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                if chars[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            i += 1;
            out.push(Tok {
                text: chars[start..i.min(chars.len())].iter().collect(),
                line,
            });
        } else if is_word(c) {
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            out.push(Tok {
                text: chars[start..i].iter().collect(),
                line,
            });
        } else if ",;:{}[]()+-<>@!|=".contains(c) {
            out.push(Tok {
                text: c.to_string(),
                line,
            });
            i += 1;
        } else {
            return Err(ImportError::new(
                line,
                format!("unexpected character `{c}`"),
            ));
        }
    }
    Ok(out)
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

/// One operand of an instruction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Operand {
    /// A register, a special register or a symbol (a parameter, a shared array, a label).
    Name(String),
    /// A number as written, its sign applied (`-1`, `0x1F`, `0f3F800000`, `1.5`).
    Number(String),
    /// `[base]`, `[base+offset]`, `[offset]`.
    Address { base: Option<String>, offset: i64 },
    /// `{a, b, c, d}` (vector loads and stores).
    Vector(Vec<String>),
    /// `p|q` (a `setp` writing a predicate and its complement).
    Pair(String, String),
    /// `!p`: a predicate operand negated.
    Not(String),
}

/// One instruction: `@p op.mods a, b, c;`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Inst {
    /// The guard predicate and whether it is negated (`@!p`).
    pub(crate) guard: Option<(String, bool)>,
    /// The opcode with its modifiers, as written (`ld.global.nc.f32`).
    pub(crate) opcode: String,
    pub(crate) operands: Vec<Operand>,
    pub(crate) line: usize,
}

/// A statement of a kernel's body.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    /// `.reg .ty names;` (`%r<4>` declares `%r0` to `%r3`).
    Reg {
        ty: String,
        names: Vec<String>,
    },
    /// `.shared .align a .ty name[n];` (`extern`: the dynamic shared memory, `name[]`), or
    /// with `local`, `.local` (a thread's own array: nvcc's stack, `__local_depot`).
    Shared {
        ty: String,
        name: String,
        len: u32,
        align: u32,
        dynamic: bool,
        local: bool,
    },
    Label(String),
    Inst(Inst),
}

/// A parameter of an entry: `.param .ty name`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Param {
    pub(crate) ty: String,
    pub(crate) name: String,
    /// `Some(n)` for an array of `n` elements (`.b8 s[16]`: a struct passed by value).
    pub(crate) count: Option<u32>,
    pub(crate) line: usize,
}

/// One `.entry`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) params: Vec<Param>,
    /// `.reqntid x, y, z`, if given.
    pub(crate) reqntid: Option<(u32, u32, u32)>,
    pub(crate) body: Vec<Item>,
    pub(crate) line: usize,
}

/// The kernels of a PTX module and its module-scope shared arrays.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Ptx {
    pub(crate) entries: Vec<Entry>,
    pub(crate) shared: Vec<Item>,
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.at).map(|t| t.text.as_str())
    }

    fn line(&self) -> usize {
        self.toks
            .get(self.at)
            .or_else(|| self.toks.last())
            .map_or(1, |t| t.line)
    }

    fn next(&mut self) -> Result<Tok, ImportError> {
        let t = self
            .toks
            .get(self.at)
            .cloned()
            .ok_or_else(|| ImportError::new(self.line(), "unexpected end of the PTX"))?;
        self.at += 1;
        Ok(t)
    }

    fn expect(&mut self, text: &str) -> Result<(), ImportError> {
        let t = self.next()?;
        if t.text == text {
            Ok(())
        } else {
            Err(ImportError::new(
                t.line,
                format!("expected `{text}`, found `{}`", t.text),
            ))
        }
    }

    fn eat(&mut self, text: &str) -> bool {
        if self.peek() == Some(text) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Skips the rest of the line the previous token is on (`.loc`, `.file`).
    fn skip_line(&mut self) {
        let line = self
            .toks
            .get(self.at.saturating_sub(1))
            .map_or(0, |t| t.line);
        while self.toks.get(self.at).is_some_and(|t| t.line == line) {
            self.at += 1;
        }
    }

    /// Skips to just after the next `;`.
    fn skip_statement(&mut self) -> Result<(), ImportError> {
        while self.next()?.text != ";" {}
        Ok(())
    }

    /// Skips a balanced `{ .. }` (a `.section`'s contents).
    fn skip_braces(&mut self) -> Result<(), ImportError> {
        self.expect("{")?;
        let mut depth = 1;
        while depth > 0 {
            match self.next()?.text.as_str() {
                "{" => depth += 1,
                "}" => depth -= 1,
                _ => {}
            }
        }
        Ok(())
    }

    fn number(&mut self) -> Result<u32, ImportError> {
        let t = self.next()?;
        parse_u32(&t.text).ok_or_else(|| {
            ImportError::new(t.line, format!("expected a number, found `{}`", t.text))
        })
    }
}

/// A decimal or hexadecimal `u32`.
fn parse_u32(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Parses a whole PTX text.
pub(crate) fn parse(src: &str) -> Result<Ptx, ImportError> {
    let mut p = Parser {
        toks: tokens(src)?,
        at: 0,
    };
    let mut ptx = Ptx::default();
    while let Some(word) = p.peek().map(str::to_owned) {
        let line = p.line();
        p.at += 1;
        match word.as_str() {
            ".version" | ".address_size" => {
                p.next()?;
            }
            ".target" => {
                p.next()?;
                while p.eat(",") {
                    p.next()?;
                }
            }
            ".file" | ".loc" => p.skip_line(),
            ".section" => {
                p.next()?;
                p.skip_braces()?;
            }
            ".visible" | ".weak" => {}
            ".extern" if p.peek() == Some(".shared") => {
                p.at += 1;
                ptx.shared.push(shared_decl(&mut p, true)?);
            }
            ".shared" => ptx.shared.push(shared_decl(&mut p, false)?),
            ".entry" => ptx.entries.push(entry(&mut p, line)?),
            ".func" | ".extern" => {
                return Err(ImportError::new(
                    line,
                    "device functions (`.func`) are not imported: compile the kernels with \
                     their calls inlined (nvcc inlines them unless told otherwise)",
                ));
            }
            ".global" | ".const" => {
                return Err(ImportError::new(
                    line,
                    format!(
                        "module-scope `{word}` variables are not imported: pass the data as a \
                         kernel parameter"
                    ),
                ));
            }
            other => {
                return Err(ImportError::new(
                    line,
                    format!("unexpected `{other}` at module scope"),
                ));
            }
        }
    }
    Ok(ptx)
}

/// `.shared .align a .ty name[n];` after `.shared`.
fn shared_decl(p: &mut Parser, dynamic: bool) -> Result<Item, ImportError> {
    let mut align = 0;
    let mut ty = None;
    loop {
        let t = p.next()?;
        match t.text.as_str() {
            ".align" => align = p.number()?,
            w if w.starts_with('.') => ty = Some(w.to_owned()),
            name => {
                let ty = ty.ok_or_else(|| ImportError::new(t.line, "a shared array's type"))?;
                let mut len = 1;
                let mut unsized_ = false;
                if p.eat("[") {
                    if p.eat("]") {
                        unsized_ = true;
                    } else {
                        len = p.number()?;
                        p.expect("]")?;
                    }
                }
                if p.peek() == Some("=") {
                    return Err(ImportError::new(
                        t.line,
                        "initialized shared arrays are not imported",
                    ));
                }
                p.expect(";")?;
                return Ok(Item::Shared {
                    ty,
                    name: name.to_owned(),
                    len,
                    align,
                    dynamic: dynamic || unsized_,
                    local: false,
                });
            }
        }
    }
}

fn entry(p: &mut Parser, line: usize) -> Result<Entry, ImportError> {
    let name = p.next()?.text;
    let mut params = Vec::new();
    if p.eat("(") {
        while !p.eat(")") {
            let pline = p.line();
            p.expect(".param")?;
            let mut words = Vec::new();
            while !matches!(p.peek(), Some("," | ")")) {
                words.push(p.next()?.text);
            }
            p.eat(",");
            let mut count = None;
            if let Some(open) = words.iter().position(|w| w == "[") {
                let n = words
                    .get(open + 1)
                    .and_then(|w| parse_u32(w))
                    .ok_or_else(|| ImportError::new(pline, "an array parameter's length"))?;
                count = Some(n);
                words.truncate(open);
            }
            let name = words
                .last()
                .cloned()
                .ok_or_else(|| ImportError::new(pline, "a parameter without a name"))?;
            let ty = words
                .iter()
                .find(|w| crate::lower::elem_type(w).is_some())
                .cloned()
                .ok_or_else(|| ImportError::new(pline, format!("parameter `{name}`'s type")))?;
            params.push(Param {
                ty,
                name,
                count,
                line: pline,
            });
        }
    }
    let mut reqntid = None;
    while !p.eat("{") {
        let t = p.next()?;
        match t.text.as_str() {
            ".reqntid" => {
                let x = p.number()?;
                let y = if p.eat(",") { p.number()? } else { 1 };
                let z = if p.eat(",") { p.number()? } else { 1 };
                reqntid = Some((x, y, z));
            }
            ".maxntid" | ".minnctapersm" | ".maxnreg" | ".maxclusterrank"
            | ".reqnctapercluster" => {
                p.number()?;
                while p.eat(",") {
                    p.number()?;
                }
            }
            ".noreturn" => {}
            ".pragma" => {
                p.next()?;
                p.eat(";");
            }
            other => {
                return Err(ImportError::new(
                    t.line,
                    format!("unexpected `{other}` before entry `{name}`'s body"),
                ));
            }
        }
    }
    let body = body(p)?;
    Ok(Entry {
        name,
        params,
        reqntid,
        body,
        line,
    })
}

/// The items up to the `}` that closes the body (inner `{ }` scopes are flattened).
fn body(p: &mut Parser) -> Result<Vec<Item>, ImportError> {
    let mut items = Vec::new();
    let mut depth = 1;
    loop {
        let line = p.line();
        let t = p.next()?;
        match t.text.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return Ok(items);
                }
            }
            ".reg" => {
                let ty = p.next()?.text;
                let mut names = Vec::new();
                loop {
                    let n = p.next()?.text;
                    if p.eat("<") {
                        let count = p.number()?;
                        p.expect(">")?;
                        names.extend((0..count).map(|i| format!("{n}{i}")));
                    } else {
                        names.push(n);
                    }
                    if !p.eat(",") {
                        break;
                    }
                }
                p.expect(";")?;
                items.push(Item::Reg { ty, names });
            }
            ".shared" => items.push(shared_decl(p, false)?),
            ".local" => match shared_decl(p, false)? {
                Item::Shared {
                    dynamic: true,
                    name,
                    ..
                } => {
                    return Err(ImportError::new(
                        line,
                        format!("local array `{name}` without a size"),
                    ));
                }
                Item::Shared {
                    ty,
                    name,
                    len,
                    align,
                    ..
                } => items.push(Item::Shared {
                    ty,
                    name,
                    len,
                    align,
                    dynamic: false,
                    local: true,
                }),
                other => items.push(other),
            },
            ".loc" | ".file" => p.skip_line(),
            ".pragma" => p.skip_statement()?,
            ".const" | ".global" | ".param" => {
                return Err(ImportError::new(
                    line,
                    format!("`{}` declarations inside a kernel are not imported", t.text),
                ));
            }
            "@" => {
                let negated = p.eat("!");
                let pred = p.next()?.text;
                let mut inst = instruction(p, line)?;
                inst.guard = Some((pred, negated));
                items.push(Item::Inst(inst));
            }
            word if p.peek() == Some(":") => {
                p.at += 1;
                items.push(Item::Label(word.to_owned()));
            }
            _ => {
                p.at -= 1;
                items.push(Item::Inst(instruction(p, line)?));
            }
        }
    }
}

/// `opcode operands;` (the guard, if any, already read).
fn instruction(p: &mut Parser, line: usize) -> Result<Inst, ImportError> {
    let opcode = p.next()?.text;
    let mut operands = Vec::new();
    if p.eat(";") {
        return Ok(Inst {
            guard: None,
            opcode,
            operands,
            line,
        });
    }
    loop {
        operands.push(operand(p)?);
        if p.eat(";") {
            break;
        }
        p.expect(",")?;
    }
    Ok(Inst {
        guard: None,
        opcode,
        operands,
        line,
    })
}

fn operand(p: &mut Parser) -> Result<Operand, ImportError> {
    if p.eat("[") {
        let mut base = None;
        let mut offset = 0i64;
        let mut sign = 1i64;
        loop {
            let t = p.next()?;
            match t.text.as_str() {
                "]" => break,
                "+" => sign = 1,
                "-" => sign = -1,
                w => match parse_int(w) {
                    Some(n) => offset += sign * n,
                    None => base = Some(w.to_owned()),
                },
            }
        }
        return Ok(Operand::Address { base, offset });
    }
    if p.eat("{") {
        let mut names = Vec::new();
        loop {
            names.push(p.next()?.text);
            if p.eat("}") {
                break;
            }
            p.expect(",")?;
        }
        return Ok(Operand::Vector(names));
    }
    if p.eat("!") {
        return Ok(Operand::Not(p.next()?.text));
    }
    let negative = p.eat("-");
    let t = p.next()?;
    if t.text.starts_with(|c: char| c.is_ascii_digit()) {
        let text = if negative {
            format!("-{}", t.text)
        } else {
            t.text
        };
        return Ok(Operand::Number(text));
    }
    if negative {
        return Err(ImportError::new(t.line, "a negated register operand"));
    }
    if p.eat("|") {
        let q = p.next()?.text;
        return Ok(Operand::Pair(t.text, q));
    }
    Ok(Operand::Name(t.text))
}

/// A decimal or hexadecimal integer (an address offset).
pub(crate) fn parse_int(text: &str) -> Option<i64> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let v = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex.trim_end_matches('U'), 16).ok()?,
        None => body.trim_end_matches('U').parse::<i64>().ok()?,
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_parses_into_declarations_labels_and_instructions() {
        let ptx = parse(
            ".version 8.0\n.target sm_80\n.address_size 64\n\
             .visible .entry k(.param .u64 .ptr .global .align 4 k_param_0, .param .u32 n)\n\
             .reqntid 128, 1, 1\n{\n .reg .pred %p<2>; .reg .b32 %r<3>;\n\
             .shared .align 4 .b8 tile[512];\n ld.param.u64 %rd1, [k_param_0];\n\
             $L0: // a comment\n @!%p1 bra $L0; st.global.v2.f32 [%rd1+-8], {%f1, %f2};\n\
             setp.lt.s32 %p1|%p2, %r1, -3; ret;\n}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let [e] = ptx.entries.as_slice() else {
            panic!("one entry")
        };
        assert_eq!(e.name, "k");
        assert_eq!(e.params.len(), 2);
        assert_eq!(e.params[0].ty, ".u64");
        assert_eq!(e.reqntid, Some((128, 1, 1)));
        assert_eq!(
            e.body[1],
            Item::Reg {
                ty: ".b32".into(),
                names: vec!["%r0".into(), "%r1".into(), "%r2".into()]
            }
        );
        assert!(matches!(
            &e.body[2],
            Item::Shared {
                len: 512,
                align: 4,
                ..
            }
        ));
        assert_eq!(e.body[4], Item::Label("$L0".into()));
        let Item::Inst(bra) = &e.body[5] else {
            panic!("a branch")
        };
        assert_eq!(bra.guard, Some(("%p1".into(), true)));
        let Item::Inst(st) = &e.body[6] else {
            panic!("a store")
        };
        assert_eq!(
            st.operands,
            vec![
                Operand::Address {
                    base: Some("%rd1".into()),
                    offset: -8
                },
                Operand::Vector(vec!["%f1".into(), "%f2".into()])
            ]
        );
        let Item::Inst(setp) = &e.body[7] else {
            panic!("a setp")
        };
        assert_eq!(setp.operands[0], Operand::Pair("%p1".into(), "%p2".into()));
        assert_eq!(setp.operands[2], Operand::Number("-3".into()));
    }
}
