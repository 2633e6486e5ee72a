//! File-system aging. So far: the target populations ([`profile`]); the
//! `age` command itself drives the engine's file operations and comes later.

pub mod profile;
