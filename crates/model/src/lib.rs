//! The workload model of fsbench: the Filebench workload language (lexer, parser, spans), fio job
//! files, the typed `Workload` they resolve to, distributions, data content and verification. It
//! uses `fsbench-base` only.

pub mod content;
pub mod dist;
pub mod fio;
pub mod fioverify;
pub mod lang;
pub mod model;
pub mod verify;
pub mod workloads;
