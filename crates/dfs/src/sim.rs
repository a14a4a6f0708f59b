//! Discrete-event simulator (filled in below).
