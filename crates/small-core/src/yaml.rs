//! YAML 1.2 loading that keeps the position of every value (placeholder; being written).
