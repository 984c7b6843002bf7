// Package checkpoint owns the layout of a checkpoint directory, the output of tracksum-train: the
// file names every model and the training loop write there, the copies of the prepared directory's
// tokenizer and of the resolved config that make a checkpoint usable without the training config,
// and the JSON format of its metadata. The tracker, the summarizer, the training loop and the
// cross-validation harness all take their names from here, so that a new model gets the same
// layout for free:
//
//	DIR/hparams.json | summarizer.json   the model's metadata (MetaFile of its kind)
//	DIR/tokenizer.json                   copy of the prepared directory's tokenizer
//	DIR/config.yaml                      the resolved config of the run
//	DIR/metrics.jsonl, DIR/curves.png    the training loop's log and plot (curves.svg: the plot as SVG)
//	DIR/best/model.safetensors           the best-on-dev variables (best/metrics.json: their dev metrics)
//	DIR/state/                           the resume point
//	DIR/report.json                      the end-of-training report (when the model writes one)
//	DIR/context.json                     the tracker's context rescorer (tracker.context_rescoring)
//	DIR/variant.json                     a TracSum Table 6 variant (model/stt, model/ete): which one,
//	                                     and for SUM-THEN-TRACK its two sub-checkpoints summarizer/, tracker/
//	DIR/checkpoint.json                  the manifest, written last (manifest.go): kind, task, backbone and
//	                                     the size and sha256 of every file a loader reads; Open checks it
//
// The names are those of the checkpoints already on disk: changing one would orphan them. For the
// same reason the variables inside best/model.safetensors keep the names each model was first
// trained with, although they differ for the same concept: the tracker's dense layers hold
// "<layer>/weights" and "<layer>/biases" and its layer norms "gain"/"offset", the summarizer's
// "<layer>_w" and "<layer>_b" and "gain"/"bias" (layers.Scoped and layers.Suffixed in
// layers). Renaming them would need a converter for every existing checkpoint.
package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"

	"github.com/tracksum/tracksum/config"
	"github.com/tracksum/tracksum/dataset"
	"github.com/tracksum/tracksum/internal/atomicio"
)

// File and directory names inside a checkpoint directory.
const (
	// HyperparamsFile is the tracker's metadata (tracker.Hyperparams).
	HyperparamsFile = "hparams.json"
	// SummarizerFile is the summarizer's metadata (summarizer.Meta).
	SummarizerFile = "summarizer.json"
	// PretrainedFile is the metadata of a fine-tuned pretrained model (pretrained.Meta).
	PretrainedFile = "pretrained.json"
	// TokenizerFile and ConfigFile keep the names they have in the prepared directory, which they
	// are copied from (tokenizer) or written like (config).
	TokenizerFile = dataset.TokenizerFile
	ConfigFile    = dataset.ConfigFile
	// ReportFile is the end-of-training report (tracker.Report, summarizer.Report).
	ReportFile = "report.json"
	// MetricsFile, PlotFile, PlotSVGFile, BestDir, BestVariables and StateDir belong to the training
	// loop (model/training): its log, its plot (PNG and SVG), the best-on-dev variables and the resume point.
	MetricsFile = "metrics.jsonl"
	// MetricsCSVFile is metrics.jsonl as CSV, written at the end of training.
	MetricsCSVFile = "metrics.csv"
	PlotFile       = "curves.png"
	PlotSVGFile    = "curves.svg"
	BestDir        = "best"
	BestVariables  = "model.safetensors"
	StateDir       = "state"
	// StateFile, inside StateDir, is the loop's position; its "done" marks a finished run.
	StateFile = "state.json"
	// BestMetricsFile, inside BestDir, holds the dev metrics of the best variables.
	BestMetricsFile = "metrics.json"
	// ContextFile is the tracker's second stage over its logits (tracker.ContextRescorer), written
	// when tracker.context_rescoring is on; a checkpoint without it scores with the logits alone.
	ContextFile = "context.json"
	// LexicalFile holds the fitted lexical tracker of tracker.architecture lexical-context
	// (vectorizers, regressions and calibration shifts; its context rescorer is in ContextFile),
	// in place of BestDir's variables: that tracker has no network.
	LexicalFile = "lexical.json"
	// VariantFile marks the checkpoint of a Table 6 variant (model/stt, model/ete): a JSON object
	// naming the variant, so that infer --method stt|ete refuses another model's checkpoint.
	VariantFile = "variant.json"
	// VariantSummarizerDir and VariantTrackerDir are SUM-THEN-TRACK's two sub-checkpoints.
	VariantSummarizerDir = "summarizer"
	VariantTrackerDir    = "tracker"
)

// BestWeights returns the path of the best-on-dev variables of the checkpoint dir.
func BestWeights(dir string) string { return filepath.Join(dir, BestDir, BestVariables) }

// WriteJSON writes v as indented JSON to path, atomically (atomicio.WriteJSON).
func WriteJSON(path string, v any) error { return atomicio.WriteJSON(path, v) }

// Files are what a model writes into its checkpoint directory before training, so that the
// checkpoint can be loaded without the prepared directory or the training config.
type Files struct {
	// MetaFile is the metadata's name (HyperparamsFile, SummarizerFile) and Meta its value,
	// written as JSON.
	MetaFile string
	Meta     any
	// Tokenizer is the content of the prepared directory's tokenizer.json (ReadTokenizer).
	Tokenizer []byte
	// Config is the resolved configuration, written as config.yaml.
	Config *config.Config
}

// ReadTokenizer returns the bytes of the tokenizer of the prepared directory dataDir, to be copied
// into a checkpoint by Write.
func ReadTokenizer(dataDir string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dataDir, dataset.TokenizerFile))
}

// SameTokenizer reports whether the checkpoint dir holds a tokenizer.json equal to tok: a resumed
// run must keep the token ids its variables were trained on.
func SameTokenizer(dir string, tok []byte) bool {
	old, err := os.ReadFile(filepath.Join(dir, TokenizerFile))
	return err == nil && bytes.Equal(old, tok)
}

// Write creates dir if needed, removes its manifest (Unseal) and writes the metadata, the tokenizer
// copy and config.yaml into it, each file atomically. The caller holds dir's lock (training.LockOutDir) and has checked that a
// checkpoint already there is compatible.
func Write(dir string, f Files) error {
	if f.MetaFile == "" || f.Meta == nil || f.Tokenizer == nil || f.Config == nil {
		return errors.New("checkpoint: Write needs the metadata, the tokenizer and the config")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A run (re)starting in dir is replacing its files: until it seals them again, dir is not a
	// finished checkpoint.
	if err := Unseal(dir); err != nil {
		return err
	}
	if err := WriteJSON(filepath.Join(dir, f.MetaFile), f.Meta); err != nil {
		return err
	}
	if err := atomicio.WriteFile(filepath.Join(dir, TokenizerFile), f.Tokenizer, 0o644); err != nil {
		return err
	}
	y, err := f.Config.YAML()
	if err != nil {
		return err
	}
	return atomicio.WriteFile(filepath.Join(dir, ConfigFile), y, 0o644)
}
