"""pandas over the Parquet outcome tables: paper tables, statistics, plots. No simulator or Ray
imports. Arrives with the experiments issue."""
