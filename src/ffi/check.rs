//! Validators by parameter kind (being written).
