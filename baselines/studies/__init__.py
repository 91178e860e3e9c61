"""Studies built on the trainer, each behind a script in scripts/: the resumable cells -> table harness
(`study`), the HIVEX results page's cells, the suite table, which config made each of their records
(`config_fingerprint`, and `config_backfill` with `config_resolve` for records made before they kept one),
the memorisation probe, the messages demo, Wind Farm Control's wakes, the Ocean Plastic Collection diagnoses,
the evaluation-loop bench and the GPU report.

Layer: the top of the trainer; may import every part below it, and nothing imports it but scripts/.
"""
