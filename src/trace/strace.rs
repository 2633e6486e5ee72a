//! Converting an strace log into trace records.
