//! Pure functions turning a loaded `dfs.*` result file into tables and series.
