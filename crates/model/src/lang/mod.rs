//! The workload language: lexer, parser, syntax tree and diagnostics.

pub mod ast;
mod diag;
pub mod lexer;
mod parser;
mod source;

pub use diag::{Collected, Diagnostic, Diagnostics};
pub use parser::parse;
pub use source::{SourceFile, Span};
