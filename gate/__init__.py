"""The pull-request gate: suites (what to measure), running them into baseline documents,
the environment they were taken in, the statistics and policy of judging, and the verdicts.
It reads the profiler's model and the rules' choice of metrics; the reports render its result."""
