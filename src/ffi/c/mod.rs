//! C entry points, grouped as the standard's chapters.
