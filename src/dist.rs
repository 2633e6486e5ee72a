//! Random distributions for `randvar` and `cvar` (placeholder, being written).
