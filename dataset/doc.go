// Package dataset is tracksum's data layer: the benchmark instance format and everything that reads,
// validates, splits and stores it, so that prepare, train, infer and eval share one definition.
//
//   - instance.go, aspects.go: the TracSum/PCoA instance (PMID, aspect, abstract sentences, summary,
//     cited sentence indices, PCoA phrases), the aspect registries (TracSum's 7, PCoA's 16) and the
//     one rule for a negative instance (IsNegative: no citation, summary "Unknown.").
//   - read.go, errors.go: the strict JSONL reader and validator of benchmark files (errors name
//     FILE:LINE and the field, with sentinel errors callers test with errors.Is); raw.go reads
//     raw-text abstracts, and sentences.go splits and cleans their text.
//   - input.go: the input formats (Formats) and ReadInput, the one place that maps a path to its
//     reader (prepared directory, annotated format, raw text).
//   - records.go: the prediction record infer writes (Prediction) and the lenient reader of
//     prediction and reference files that eval scores (ReadRecords).
//   - splits.go, folds.go: seeded train/dev/test splits and cross-validation folds, grouped by PMID
//     (no abstract in two parts) or by instance (the paper's protocol).
//   - rows.go, shards.go, manifest.go: the training rows of each task, written as zstd Parquet shards
//     and read back as iter.Seq2 after checking each shard against manifest.json (sha256, rows).
//   - synthetic.go: the deterministic generator of the built-in sample of clinical-trial abstracts.
//
// Adding an input format means one new reader here, added to Formats: prepare, infer and every
// caller of ReadInput or StreamWith then read it by file name (see dataset/prepare's
// TestRunOtherFormat).
package dataset
