"""The benchmark job of recipe `evalkit/benchmark`: `python -m starforge.evalkit --config FILE [overrides]` runs
lm-eval on the model with the suites of the chosen benchmark packs, `repeat` times with different seeds, writes
`eval/report.json`, registers it as an `eval_report` artifact and reports the scores to the console
(`POST {STARFORGE_ENDPOINT}/benchmark`). lm-eval is imported only by the job, in its runtime."""
