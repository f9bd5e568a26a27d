//! TeX macros that authors define in their manuscripts (`\newcommand`, `\renewcommand`,
//! `\providecommand`, `\def`, `\DeclareMathOperator`, `\let`), expanded before the TeX reaches
//! the MathML converter, which knows none of them.
//!
//! What it promises:
//! - definitions last for the whole book, in the order the expressions are read, because
//!   authors define a macro once (often in an expression of its own) and use it later;
//! - an expression that only defines macros leaves an empty string, which the caller drops;
//! - expansion reads arguments as TeX does (a braced group or one token; `\{` is a symbol,
//!   not a group; `%` comments to the end of the line), with up to nine parameters and an
//!   optional first argument with a default;
//! - expansion is bounded: past [`Limits::max_bytes`] of output, [`Limits::max_steps`]
//!   expansions, or a fixed amount of copying, it stops with a [`MacroError`] that names the
//!   macro, so a macro that calls itself or doubles at each level fails in milliseconds and
//!   allocates at most a few times `max_bytes`;
//! - an expression that uses no macro of the book comes back byte for byte, so the
//!   converter's error positions still point into the author's text.
//!
//! Not supported: delimited parameters (`\def\foo#1.{…}`), `\edef`/`\xdef` beyond a plain
//! `\def`, and TeX grouping (a definition inside braces is still book-wide, as MathJax does).

use std::collections::HashMap;

/// Bounds on one expression's expansion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest expansion, in bytes (Bindery's `MAX_TEX_LEN`: the converter refuses longer).
    pub max_bytes: usize,
    /// Most macros expanded in one expression; real TeX uses a few dozen.
    pub max_steps: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 20_000,
            max_steps: 10_000,
        }
    }
}

/// Tokens copied into the input per byte of `max_bytes` allowed: it bounds the time a macro
/// that shuffles a long argument round without growing the output can take (a million
/// token copies at the default limits, a few milliseconds).
const WORK_PER_BYTE: usize = 50;

/// Why an expression's macros could not be read or expanded, worded for the author.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MacroError {
    #[error("{command} needs the name of a macro, as in {command}{{\\name}}{{…}}")]
    NoName { command: String },
    #[error("{command}{{\\{name}}} has no body")]
    NoBody { command: String, name: String },
    #[error("the body of {command}{{\\{name}}} has no closing brace")]
    Unclosed { command: String, name: String },
    #[error("{command}{{\\{name}}}: the number of arguments must be 0 to 9, not “{found}”")]
    BadArgCount {
        command: String,
        name: String,
        found: String,
    },
    #[error("the macro \\{name} uses #{param} but takes {count} arguments")]
    ParamOutOfRange { name: String, param: u8, count: u8 },
    #[error(
        "\\def\\{name} has parameters other than #1#2…, which Bindery does not support (use \\newcommand)"
    )]
    DelimitedParams { name: String },
    #[error("the macro \\{name} takes {count} arguments but is missing one")]
    MissingArgument { name: String, count: u8 },
    #[error("an argument of the macro \\{name} has no closing brace")]
    UnclosedArgument { name: String },
    #[error("the macro \\{name} expands past {limit} bytes (a macro that calls itself?)")]
    TooLong { name: String, limit: usize },
    #[error("the macro \\{name} expands more than {limit} times (a macro that calls itself?)")]
    TooManySteps { name: String, limit: usize },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A control word, `\name` (letters only).
    Word(String),
    /// A control symbol, `\{` or `\,`.
    Symbol(char),
    Char(char),
    /// A run of white space, as TeX reads it (one space).
    Space,
    /// `#n` in a macro's body.
    Param(u8),
}

impl Token {
    fn is_char(&self, c: char) -> bool {
        *self == Token::Char(c)
    }

    /// The macro name it calls, if it is a control sequence.
    fn name(&self) -> Option<String> {
        match self {
            Token::Word(name) => Some(name.clone()),
            Token::Symbol(c) => Some(c.to_string()),
            _ => None,
        }
    }

    /// Bytes it takes written out (a control word may need a space after it).
    fn len(&self) -> usize {
        match self {
            Token::Word(name) => name.len() + 2,
            Token::Symbol(c) => 1 + c.len_utf8(),
            Token::Char(c) => c.len_utf8(),
            Token::Space => 1,
            Token::Param(_) => 2,
        }
    }
}

#[derive(Debug, Clone)]
struct Macro {
    params: u8,
    /// The first argument's default, for `\newcommand{\f}[2][x]{…}`: then `\f[y]{z}`.
    default: Option<Vec<Token>>,
    body: Vec<Token>,
}

/// The macros a book defined so far.
#[derive(Debug, Clone, Default)]
pub struct Macros {
    defined: HashMap<String, Macro>,
    limits: Limits,
}

const DEFINERS: &[&str] = &[
    "newcommand",
    "renewcommand",
    "providecommand",
    "def",
    "gdef",
    "DeclareMathOperator",
    "let",
];

impl Macros {
    #[cfg(test)]
    pub fn with_limits(limits: Limits) -> Self {
        Macros {
            defined: HashMap::new(),
            limits,
        }
    }

    /// Whether the book has defined `\name`.
    #[cfg(test)]
    pub fn is_defined(&self, name: &str) -> bool {
        self.defined.contains_key(name)
    }

    /// Records the definitions in `tex` and returns the rest of it, which is empty (or white
    /// space) when the expression only defined macros.
    pub fn take_definitions(&mut self, tex: &str) -> Result<String, MacroError> {
        let tokens = tokenize(tex);
        if !tokens
            .iter()
            .any(|t| matches!(t, Token::Word(w) if DEFINERS.contains(&w.as_str())))
        {
            return Ok(tex.to_owned());
        }
        let mut rest = Vec::with_capacity(tokens.len());
        let mut i = 0;
        while let Some(token) = tokens.get(i) {
            i += 1;
            let Token::Word(word) = token else {
                rest.push(token.clone());
                continue;
            };
            match word.as_str() {
                "newcommand" | "renewcommand" | "providecommand" => {
                    let keep_old = word == "providecommand";
                    let (name, definition) = newcommand(word, &tokens, &mut i)?;
                    if !(keep_old && self.defined.contains_key(&name)) {
                        self.defined.insert(name, definition);
                    }
                }
                "def" | "gdef" => {
                    let (name, definition) = def(&tokens, &mut i)?;
                    self.defined.insert(name, definition);
                }
                "DeclareMathOperator" => {
                    let (name, definition) = operator(&tokens, &mut i)?;
                    self.defined.insert(name, definition);
                }
                "let" => {
                    let (name, definition) = self.let_(&tokens, &mut i)?;
                    self.defined.insert(name, definition);
                }
                _ => rest.push(token.clone()),
            }
        }
        Ok(untokenize(&rest))
    }

    /// `\let\a\b` (or `\let\a=\b`): `\a` means what `\b` means now.
    fn let_(&self, tokens: &[Token], i: &mut usize) -> Result<(String, Macro), MacroError> {
        let command = "\\let";
        skip_spaces(tokens, i);
        let name = tokens
            .get(*i)
            .and_then(Token::name)
            .ok_or_else(|| MacroError::NoName {
                command: command.into(),
            })?;
        *i += 1;
        skip_spaces(tokens, i);
        if tokens.get(*i).is_some_and(|t| t.is_char('=')) {
            *i += 1;
            skip_spaces(tokens, i);
        }
        let target = tokens.get(*i).cloned().ok_or_else(|| MacroError::NoBody {
            command: command.into(),
            name: name.clone(),
        })?;
        *i += 1;
        let copied = target.name().and_then(|n| self.defined.get(&n)).cloned();
        let definition = copied.unwrap_or(Macro {
            params: 0,
            default: None,
            body: vec![target],
        });
        Ok((name, definition))
    }

    /// `tex` with the book's macros expanded (see the module's comment for the bounds).
    pub fn expand(&self, tex: &str) -> Result<String, MacroError> {
        if self.defined.is_empty() {
            return Ok(tex.to_owned());
        }
        let tokens = tokenize(tex);
        let uses_macros = tokens
            .iter()
            .any(|t| t.name().is_some_and(|n| self.defined.contains_key(&n)));
        if !uses_macros {
            return Ok(tex.to_owned());
        }
        let out = self.expand_tokens(tokens)?;
        let text = untokenize(&out);
        if text.len() > self.limits.max_bytes {
            // Only the spaces written between tokens can take it past the count kept while
            // expanding; name the first macro the expression used.
            let name = out_first_macro(tex, self).unwrap_or_default();
            return Err(MacroError::TooLong {
                name,
                limit: self.limits.max_bytes,
            });
        }
        Ok(text)
    }

    fn expand_tokens(&self, mut tokens: Vec<Token>) -> Result<Vec<Token>, MacroError> {
        let Limits {
            max_bytes,
            max_steps,
        } = self.limits;
        let max_work = max_bytes.saturating_mul(WORK_PER_BYTE);
        // The input, next token last, as TeX's input stack: a macro's body is pushed onto it.
        tokens.reverse();
        let mut input = tokens;
        // Tokens below this index are still the author's: it names, in an error, the macro
        // the author wrote rather than one deep inside it.
        let mut authored = input.len();
        let mut top = String::new();
        let mut out: Vec<Token> = Vec::new();
        let (mut bytes, mut steps, mut work) = (0usize, 0usize, 0usize);
        while let Some(token) = input.pop() {
            let from_author = input.len() < authored;
            authored = authored.min(input.len());
            let Some(definition) = token.name().and_then(|n| self.defined.get(&n)) else {
                bytes += token.len();
                if bytes > max_bytes {
                    return Err(MacroError::TooLong {
                        name: top,
                        limit: max_bytes,
                    });
                }
                out.push(token);
                continue;
            };
            let name = token.name().unwrap_or_default();
            if from_author {
                top.clone_from(&name);
            }
            steps += 1;
            if steps > max_steps {
                return Err(MacroError::TooManySteps {
                    name: top,
                    limit: max_steps,
                });
            }
            let args = read_arguments(&name, definition, &mut input)?;
            authored = authored.min(input.len());
            let before = input.len();
            for body_token in definition.body.iter().rev() {
                match body_token {
                    Token::Param(n) => {
                        let arg = args.get(usize::from(*n).wrapping_sub(1));
                        input.extend(arg.into_iter().flatten().rev().cloned());
                    }
                    other => input.push(other.clone()),
                }
                // Checked as it grows, so that one huge substitution cannot allocate first.
                if input.len().saturating_sub(before) > max_bytes {
                    return Err(MacroError::TooLong {
                        name: top,
                        limit: max_bytes,
                    });
                }
            }
            work += input.len() - before;
            if work > max_work {
                return Err(MacroError::TooManySteps {
                    name: top,
                    limit: max_steps,
                });
            }
            // Pending tokens that are not macros all become output; past the limit the
            // expansion cannot fit whatever comes next.
            if input.len() > max_bytes.saturating_mul(2) {
                return Err(MacroError::TooLong {
                    name: top,
                    limit: max_bytes,
                });
            }
        }
        Ok(out)
    }
}

/// The first of the book's macros `tex` uses.
fn out_first_macro(tex: &str, macros: &Macros) -> Option<String> {
    tokenize(tex)
        .iter()
        .filter_map(Token::name)
        .find(|n| macros.defined.contains_key(n))
}

/// Reads a macro's arguments off `input` (next token last).
fn read_arguments(
    name: &str,
    definition: &Macro,
    input: &mut Vec<Token>,
) -> Result<Vec<Vec<Token>>, MacroError> {
    let mut args = Vec::with_capacity(usize::from(definition.params));
    let mut from = 0;
    if let Some(default) = &definition.default {
        while input.last() == Some(&Token::Space) {
            input.pop();
        }
        if input.last().is_some_and(|t| t.is_char('[')) {
            input.pop();
            let mut arg = Vec::new();
            let mut depth = 0usize;
            loop {
                let token = input.pop().ok_or_else(|| MacroError::UnclosedArgument {
                    name: name.to_owned(),
                })?;
                match token {
                    Token::Char(']') if depth == 0 => break,
                    Token::Char('{') => depth += 1,
                    Token::Char('}') => depth = depth.saturating_sub(1),
                    _ => {}
                }
                arg.push(token);
            }
            args.push(arg);
        } else {
            args.push(default.clone());
        }
        from = 1;
    }
    for _ in from..definition.params {
        while input.last() == Some(&Token::Space) {
            input.pop();
        }
        let missing = || MacroError::MissingArgument {
            name: name.to_owned(),
            count: definition.params,
        };
        let token = input.pop().ok_or_else(missing)?;
        match token {
            Token::Char('{') => {
                let group = read_group(input).ok_or_else(|| MacroError::UnclosedArgument {
                    name: name.to_owned(),
                })?;
                args.push(group);
            }
            Token::Char('}') => return Err(missing()),
            other => args.push(vec![other]),
        }
    }
    Ok(args)
}

/// The tokens up to the `}` that closes a group just opened (consumed), from `input` (next
/// token last); `None` when the input ends first.
fn read_group(input: &mut Vec<Token>) -> Option<Vec<Token>> {
    let mut group = Vec::new();
    let mut depth = 0usize;
    loop {
        let token = input.pop()?;
        match token {
            Token::Char('{') => depth += 1,
            Token::Char('}') if depth == 0 => return Some(group),
            Token::Char('}') => depth -= 1,
            _ => {}
        }
        group.push(token);
    }
}

fn skip_spaces(tokens: &[Token], i: &mut usize) {
    while tokens.get(*i) == Some(&Token::Space) {
        *i += 1;
    }
}

/// The group that opens at `tokens[*i]` (a `{`), its braces off; `*i` moves past it.
/// `Ok(None)` when there is no group there, `Err(())` when it is not closed.
fn group_at(tokens: &[Token], i: &mut usize) -> Result<Option<Vec<Token>>, ()> {
    if !tokens.get(*i).is_some_and(|t| t.is_char('{')) {
        return Ok(None);
    }
    let mut depth = 0usize;
    for (j, token) in tokens.iter().enumerate().skip(*i + 1) {
        match token {
            Token::Char('{') => depth += 1,
            Token::Char('}') if depth == 0 => {
                let group = tokens[*i + 1..j].to_vec();
                *i = j + 1;
                return Ok(Some(group));
            }
            Token::Char('}') => depth -= 1,
            _ => {}
        }
    }
    Err(())
}

/// A definition's name: `\name` or `{\name}`.
fn macro_name(command: &str, tokens: &[Token], i: &mut usize) -> Result<String, MacroError> {
    let no_name = || MacroError::NoName {
        command: command.to_owned(),
    };
    skip_spaces(tokens, i);
    let mut j = *i;
    let braced = group_at(tokens, &mut j).map_err(|()| no_name())?;
    let name = match braced {
        Some(group) => {
            let mut names = group.iter().filter(|t| **t != Token::Space);
            match (names.next().and_then(Token::name), names.next()) {
                (Some(name), None) => name,
                _ => return Err(no_name()),
            }
        }
        None => {
            let name = tokens.get(j).and_then(Token::name).ok_or_else(no_name)?;
            j += 1;
            name
        }
    };
    *i = j;
    Ok(name)
}

/// A definition's body: a braced group, or (as LaTeX allows) one token.
fn body(
    command: &str,
    name: &str,
    tokens: &[Token],
    i: &mut usize,
) -> Result<Vec<Token>, MacroError> {
    skip_spaces(tokens, i);
    let group = group_at(tokens, i).map_err(|()| MacroError::Unclosed {
        command: command.to_owned(),
        name: name.to_owned(),
    })?;
    if let Some(group) = group {
        return Ok(group);
    }
    match tokens.get(*i) {
        Some(token @ (Token::Word(_) | Token::Symbol(_) | Token::Char(_)))
            if !token.is_char('}') =>
        {
            *i += 1;
            Ok(vec![token.clone()])
        }
        _ => Err(MacroError::NoBody {
            command: command.to_owned(),
            name: name.to_owned(),
        }),
    }
}

/// `#1`…`#9` in a body become parameters, `##` a `#` (for a definition inside a definition);
/// a parameter past the macro's count is the author's mistake, named.
fn parameters(name: &str, body: Vec<Token>, count: u8) -> Result<Vec<Token>, MacroError> {
    let mut out = Vec::with_capacity(body.len());
    let mut tokens = body.into_iter().peekable();
    while let Some(token) = tokens.next() {
        if !token.is_char('#') {
            out.push(token);
            continue;
        }
        match tokens.peek() {
            Some(Token::Char(c @ '1'..='9')) => {
                let param = u8::try_from(c.to_digit(10).unwrap_or(0)).unwrap_or(0);
                if param > count {
                    return Err(MacroError::ParamOutOfRange {
                        name: name.to_owned(),
                        param,
                        count,
                    });
                }
                tokens.next();
                out.push(Token::Param(param));
            }
            Some(Token::Char('#')) => {
                tokens.next();
                out.push(Token::Char('#'));
            }
            _ => out.push(token),
        }
    }
    Ok(out)
}

/// `\newcommand*{\name}[n][default]{body}` and its kin, `tokens[*i]` just after the command.
fn newcommand(word: &str, tokens: &[Token], i: &mut usize) -> Result<(String, Macro), MacroError> {
    let command = format!("\\{word}");
    skip_spaces(tokens, i);
    if tokens.get(*i).is_some_and(|t| t.is_char('*')) {
        *i += 1;
    }
    let name = macro_name(&command, tokens, i)?;
    skip_spaces(tokens, i);
    let mut params = 0u8;
    let mut default = None;
    if tokens.get(*i).is_some_and(|t| t.is_char('[')) {
        let found = bracketed(tokens, i);
        let text = untokenize(&found).trim().to_owned();
        params = match text.parse::<u8>() {
            Ok(n) if n <= 9 => n,
            _ => {
                return Err(MacroError::BadArgCount {
                    command,
                    name,
                    found: text,
                });
            }
        };
        skip_spaces(tokens, i);
        if params > 0 && tokens.get(*i).is_some_and(|t| t.is_char('[')) {
            default = Some(bracketed(tokens, i));
        }
    }
    let body = body(&command, &name, tokens, i)?;
    let body = parameters(&name, body, params)?;
    Ok((
        name,
        Macro {
            params,
            default,
            body,
        },
    ))
}

/// What is between `[` at `tokens[*i]` and its `]` (outside braces); `*i` moves past it.
fn bracketed(tokens: &[Token], i: &mut usize) -> Vec<Token> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    *i += 1;
    while let Some(token) = tokens.get(*i) {
        *i += 1;
        match token {
            Token::Char(']') if depth == 0 => break,
            Token::Char('{') => depth += 1,
            Token::Char('}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        out.push(token.clone());
    }
    out
}

/// `\def\name#1#2{body}`: undelimited parameters only.
fn def(tokens: &[Token], i: &mut usize) -> Result<(String, Macro), MacroError> {
    let command = "\\def";
    skip_spaces(tokens, i);
    let name = tokens
        .get(*i)
        .and_then(Token::name)
        .ok_or_else(|| MacroError::NoName {
            command: command.into(),
        })?;
    *i += 1;
    let mut params = 0u8;
    loop {
        match (tokens.get(*i), tokens.get(*i + 1)) {
            (Some(Token::Char('{')), _) => break,
            (Some(Token::Char('#')), Some(Token::Char(c)))
                if c.to_digit(10) == Some(u32::from(params) + 1) =>
            {
                params += 1;
                *i += 2;
            }
            (Some(Token::Space), _) if params == 0 => *i += 1,
            (None, _) => {
                return Err(MacroError::NoBody {
                    command: command.into(),
                    name,
                });
            }
            _ => return Err(MacroError::DelimitedParams { name }),
        }
    }
    let body = body(command, &name, tokens, i)?;
    let body = parameters(&name, body, params)?;
    Ok((
        name,
        Macro {
            params,
            default: None,
            body,
        },
    ))
}

/// `\DeclareMathOperator{\name}{text}`, or `*` for an operator with limits (`\argmax_x`).
fn operator(tokens: &[Token], i: &mut usize) -> Result<(String, Macro), MacroError> {
    let command = "\\DeclareMathOperator";
    skip_spaces(tokens, i);
    let limits = tokens.get(*i).is_some_and(|t| t.is_char('*'));
    if limits {
        *i += 1;
    }
    let name = macro_name(command, tokens, i)?;
    let text = body(command, &name, tokens, i)?;
    let mut body = vec![Token::Word("operatorname".into())];
    if limits {
        body.push(Token::Char('*'));
    }
    body.push(Token::Char('{'));
    body.extend(text);
    body.push(Token::Char('}'));
    Ok((
        name,
        Macro {
            params: 0,
            default: None,
            body,
        },
    ))
}

/// TeX's reading of `tex` into tokens: control words swallow the spaces after them, `%`
/// comments out the rest of the line (and the next line's indentation).
fn tokenize(tex: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = tex.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(first) if first.is_ascii_alphabetic() => {
                    let mut name = String::from(first);
                    while let Some(&next) = chars.peek() {
                        if !next.is_ascii_alphabetic() {
                            break;
                        }
                        name.push(next);
                        chars.next();
                    }
                    while chars.peek().is_some_and(|c| c.is_whitespace()) {
                        chars.next();
                    }
                    tokens.push(Token::Word(name));
                }
                Some(symbol) => tokens.push(Token::Symbol(symbol)),
                None => tokens.push(Token::Char('\\')),
            },
            '%' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                    chars.next();
                }
            }
            c if c.is_whitespace() => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if tokens.last() != Some(&Token::Space) {
                    tokens.push(Token::Space);
                }
            }
            c => tokens.push(Token::Char(c)),
        }
    }
    tokens
}

/// Tokens written back as TeX that reads as the same tokens.
fn untokenize(tokens: &[Token]) -> String {
    let mut out = String::with_capacity(tokens.iter().map(Token::len).sum());
    for (k, token) in tokens.iter().enumerate() {
        match token {
            Token::Word(name) => {
                out.push('\\');
                out.push_str(name);
                // `\alpha` then `b` must not read as `\alphab`.
                if let Some(Token::Char(c)) = tokens.get(k + 1)
                    && c.is_alphabetic()
                {
                    out.push(' ');
                }
            }
            Token::Symbol(c) => {
                out.push('\\');
                out.push(*c);
            }
            Token::Char(c) => out.push(*c),
            Token::Space => out.push(' '),
            Token::Param(n) => {
                out.push('#');
                out.push(char::from(b'0' + n.min(&9)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn run(macros: &mut Macros, tex: &str) -> Result<String, MacroError> {
        let rest = macros.take_definitions(tex)?;
        macros.expand(&rest)
    }

    #[test]
    fn a_definition_only_expression_leaves_nothing() {
        let mut m = Macros::default();
        for tex in [
            r"\newcommand{\R}{\mathbb{R}}",
            r"\newcommand\N{\mathbb{N}} \renewcommand{\R}{\mathbf{R}}",
            r"\def\Z{\mathbb{Z}}",
            "\\DeclareMathOperator{\\Tr}{Tr} % the trace\n",
        ] {
            assert_eq!(run(&mut m, tex).expect("defines").trim(), "", "{tex}");
        }
        assert_eq!(
            run(&mut m, r"x \in \R").expect("expands"),
            r"x \in\mathbf{R}"
        );
        assert_eq!(
            run(&mut m, r"\N\Z").expect("expands"),
            r"\mathbb{N}\mathbb{Z}"
        );
    }

    #[test]
    fn definitions_last_through_the_book() {
        let mut m = Macros::default();
        run(&mut m, r"\newcommand{\e}{\mathrm{e}}").expect("defines");
        assert_eq!(run(&mut m, r"\e^x").expect("expands"), r"\mathrm{e}^x");
        // providecommand does not replace a definition.
        run(&mut m, r"\providecommand{\e}{E}").expect("defines");
        assert_eq!(run(&mut m, r"\e").expect("expands"), r"\mathrm{e}");
        assert!(m.is_defined("e"));
    }

    #[test]
    fn parameters_and_an_optional_default() {
        let mut m = Macros::default();
        run(&mut m, r"\newcommand{\norm}[1]{\left\| #1 \right\|}").expect("defines");
        run(
            &mut m,
            r"\newcommand{\pd}[2][x]{\frac{\partial #2}{\partial #1}}",
        )
        .expect("defines");
        run(&mut m, r"\def\pair#1#2{(#1, #2)}").expect("defines");
        assert_eq!(
            run(&mut m, r"\norm{\frac{a}{b}}").expect("expands"),
            r"\left\| \frac{a}{b} \right\|"
        );
        assert_eq!(
            run(&mut m, r"\pd{f} + \pd[t]{g}").expect("expands"),
            r"\frac{\partial f}{\partial x} + \frac{\partial g}{\partial t}"
        );
        // One token is an argument: `\pair ab`, `\pair\alpha b`.
        assert_eq!(run(&mut m, r"\pair ab").expect("expands"), "(a, b)");
        assert_eq!(
            run(&mut m, r"\pair\alpha b").expect("expands"),
            r"(\alpha, b)"
        );
    }

    #[test]
    fn nested_and_escaped_braces_in_arguments() {
        let mut m = Macros::default();
        run(&mut m, r"\newcommand{\set}[1]{\{ #1 \}}").expect("defines");
        assert_eq!(
            run(&mut m, r"\set{x : \{a\} \ne {b}}").expect("expands"),
            r"\{ x : \{a\} \ne{b} \}"
        );
        // `\}` does not close the argument.
        assert_eq!(run(&mut m, r"\set{\}}").expect("expands"), r"\{ \} \}");
        assert!(matches!(
            run(&mut m, r"\set{a"),
            Err(MacroError::UnclosedArgument { .. })
        ));
        assert!(matches!(
            run(&mut m, r"{\set}"),
            Err(MacroError::MissingArgument { .. })
        ));
    }

    #[test]
    fn a_comment_runs_to_the_end_of_the_line() {
        let mut m = Macros::default();
        run(&mut m, "\\newcommand{\\h}{\\hbar} % Planck, reduced }{\n").expect("defines");
        assert_eq!(
            run(&mut m, "\\h % not \\h\n  x").expect("expands"),
            r"\hbar x"
        );
        // `\%` is a percent sign, not a comment.
        assert_eq!(run(&mut m, r"\h\%").expect("expands"), r"\hbar\%");
    }

    #[test]
    fn macros_expand_inside_other_macros_and_text() {
        let mut m = Macros::default();
        run(
            &mut m,
            r"\newcommand{\R}{\mathbb{R}}\newcommand{\Rn}[1]{\R^{#1}}",
        )
        .expect("defines");
        assert_eq!(run(&mut m, r"\Rn{n}").expect("expands"), r"\mathbb{R}^{n}");
        assert_eq!(
            run(&mut m, r"\text{in \R}").expect("expands"),
            r"\text{in \mathbb{R}}"
        );
        // A control word followed by a letter keeps them apart.
        run(&mut m, r"\newcommand{\a}{\alpha}").expect("defines");
        assert_eq!(run(&mut m, r"\a b").expect("expands"), r"\alpha b");
    }

    #[test]
    fn let_copies_a_meaning() {
        let mut m = Macros::default();
        run(
            &mut m,
            r"\newcommand{\R}{\mathbb{R}} \let\reals=\R \let\eps\varepsilon",
        )
        .expect("defines");
        run(&mut m, r"\renewcommand{\R}{R}").expect("defines");
        assert_eq!(
            run(&mut m, r"\reals \eps").expect("expands"),
            r"\mathbb{R}\varepsilon"
        );
    }

    #[test]
    fn declared_operators_become_operatorname() {
        let mut m = Macros::default();
        run(
            &mut m,
            r"\DeclareMathOperator{\Tr}{Tr}\DeclareMathOperator*{\argmax}{arg\,max}",
        )
        .expect("defines");
        assert_eq!(
            run(&mut m, r"\Tr A").expect("expands"),
            r"\operatorname{Tr}A"
        );
        assert_eq!(
            run(&mut m, r"\argmax_x").expect("expands"),
            r"\operatorname*{arg\,max}_x"
        );
    }

    #[test]
    fn an_expression_without_the_books_macros_is_unchanged() {
        let mut m = Macros::default();
        run(&mut m, r"\newcommand{\R}{\mathbb{R}}").expect("defines");
        let tex = "\\alpha   x % note\n + \\frac{a}{b}";
        assert_eq!(run(&mut m, tex).expect("expands"), tex);
    }

    #[test]
    fn mistakes_in_definitions_are_named() {
        let mut m = Macros::default();
        let error = run(&mut m, r"\newcommand{\foo}").expect_err("no body");
        assert_eq!(error.to_string(), r"\newcommand{\foo} has no body");
        assert!(matches!(
            run(&mut m, r"\newcommand{}{x}"),
            Err(MacroError::NoName { .. })
        ));
        assert!(matches!(
            run(&mut m, r"\newcommand{\f}[x]{x}"),
            Err(MacroError::BadArgCount { .. })
        ));
        let error = run(&mut m, r"\newcommand{\f}[1]{#1 #2}").expect_err("#2");
        assert_eq!(
            error.to_string(),
            r"the macro \f uses #2 but takes 1 arguments"
        );
        assert!(matches!(
            run(&mut m, r"\def\f#1.{#1}"),
            Err(MacroError::DelimitedParams { .. })
        ));
        assert!(matches!(
            run(&mut m, r"\newcommand{\f}{x"),
            Err(MacroError::Unclosed { .. })
        ));
    }

    fn fails_fast(macros: &mut Macros, definitions: &str, use_: &str) -> MacroError {
        let started = Instant::now();
        run(macros, definitions).expect("defines");
        let error = run(macros, use_).expect_err("a bomb must fail");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        error
    }

    #[test]
    fn a_macro_bomb_fails_quickly() {
        let names: Vec<String> = (0..30)
            .map(|k| {
                format!("m{}", char::from(b'a' + k / 26)) + &char::from(b'a' + k % 26).to_string()
            })
            .collect();
        let mut definitions = String::new();
        for pair in names.windows(2) {
            definitions.push_str(&format!(
                r"\newcommand{{\{}}}{{\{}\{}}}",
                pair[0], pair[1], pair[1]
            ));
        }
        definitions.push_str(&format!(r"\newcommand{{\{}}}{{xx}}", names[29]));
        let mut m = Macros::default();
        let error = fails_fast(&mut m, &definitions, &format!(r"\{}", names[0]));
        assert!(error.to_string().contains(r"\maa "), "{error}");

        // Doubling an argument at each level.
        let mut m = Macros::default();
        fails_fast(
            &mut m,
            r"\newcommand{\d}[1]{#1#1}",
            &(r"\d{".repeat(40) + "x" + &"}".repeat(40)),
        );
    }

    #[test]
    fn a_macro_that_calls_itself_fails_quickly() {
        let mut m = Macros::default();
        let error = fails_fast(&mut m, r"\newcommand{\x}{\x x}", r"a + \x");
        assert_eq!(
            error.to_string(),
            r"the macro \x expands more than 10000 times (a macro that calls itself?)"
        );
        // One that only ever grows its input, and one that shuffles a long argument.
        fails_fast(&mut m, r"\def\y{\y\y}", r"\y");
        fails_fast(
            &mut m,
            r"\newcommand{\s}[1]{\s{#1}}",
            &format!(r"\s{{{}}}", "ab".repeat(9_000)),
        );
        // Smaller limits are kept too.
        let mut m = Macros::with_limits(Limits {
            max_bytes: 100,
            max_steps: 10,
        });
        let error = fails_fast(&mut m, r"\newcommand{\w}{wwwwwwwwww}", &r"\w".repeat(11));
        assert!(
            matches!(error, MacroError::TooManySteps { limit: 10, .. }),
            "{error}"
        );
        let error = fails_fast(
            &mut m,
            &format!(r"\newcommand{{\v}}{{{}}}", "v".repeat(60)),
            r"\v\v",
        );
        assert!(
            matches!(error, MacroError::TooLong { limit: 100, .. }),
            "{error}"
        );
    }
}
